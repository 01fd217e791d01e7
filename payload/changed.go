package payload

import (
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
)

// ChangedPaths lists, in gjson syntax and sorted, the leaf paths whose values
// differ between old and new, ignoring metadata.resourceVersion and
// metadata.managedFields. A subtree present on one side only lists its leaves; an
// empty object or array counts as a leaf.
func ChangedPaths(old, new []byte) []string {
	var out []string
	diffValues(gjson.ParseBytes(old), gjson.ParseBytes(new), "", &out)
	slices.Sort(out)
	return slices.Compact(out)
}

func ignoredPath(p string) bool {
	return p == "metadata.resourceVersion" || p == "metadata.managedFields"
}

func childPath(parent, key string) string {
	key = gjson.Escape(key)
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func diffValues(a, b gjson.Result, path string, out *[]string) {
	if ignoredPath(path) || (a.Exists() && a.Raw == b.Raw) {
		return // the same bytes: nothing under them changed
	}
	switch {
	case a.IsObject() && b.IsObject():
		// One pass over each side: b's members by key, then a's.
		bm := map[string]gjson.Result{}
		b.ForEach(func(k, bv gjson.Result) bool {
			bm[k.Str] = bv
			return true
		})
		a.ForEach(func(k, av gjson.Result) bool {
			bv := bm[k.Str]
			delete(bm, k.Str)
			diffValues(av, bv, childPath(path, k.Str), out)
			return true
		})
		for k, bv := range bm {
			diffValues(gjson.Result{}, bv, childPath(path, k), out)
		}
	case a.IsArray() && b.IsArray():
		as, bs := a.Array(), b.Array()
		for i := range max(len(as), len(bs)) {
			var av, bv gjson.Result
			if i < len(as) {
				av = as[i]
			}
			if i < len(bs) {
				bv = bs[i]
			}
			diffValues(av, bv, childPath(path, strconv.Itoa(i)), out)
		}
	case a.Raw == b.Raw:
	case isContainer(a) || isContainer(b):
		// One side is a container and the other is not (or is missing): every
		// leaf of the container changed.
		leaves(a, path, out)
		leaves(b, path, out)
	default:
		*out = append(*out, path)
	}
}

func isContainer(r gjson.Result) bool {
	return r.IsObject() || r.IsArray()
}

// leaves appends the leaf paths of r (r itself if it is a scalar or empty).
func leaves(r gjson.Result, path string, out *[]string) {
	if !r.Exists() || ignoredPath(path) {
		return
	}
	n := 0
	if r.IsObject() {
		r.ForEach(func(k, v gjson.Result) bool {
			n++
			leaves(v, childPath(path, k.Str), out)
			return true
		})
	} else if r.IsArray() {
		for i, v := range r.Array() {
			n++
			leaves(v, childPath(path, strconv.Itoa(i)), out)
		}
	}
	if n == 0 {
		*out = append(*out, path)
	}
}
