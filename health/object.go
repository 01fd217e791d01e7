package health

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// object is an object's JSON, read path by path with gjson: the generic path
// never decodes an object into maps.
type object []byte

func (o object) get(path string) gjson.Result { return gjson.GetBytes(o, path) }

// integer reads an integer at path, or def when it is missing or not a whole
// JSON number (kstatus reads numbers as the API machinery decodes them: a
// number written with a fraction or an exponent is a float, and not taken).
func (o object) integer(path string, def int64) int64 {
	n, ok := o.exactInt(path)
	if !ok {
		return def
	}
	return n
}

// exactInt reads an integer at path; ok is false when it is missing or is no
// whole JSON number within int64 (the API machinery decodes one past its
// range as a float, as it does one with a fraction or an exponent).
func (o object) exactInt(path string) (int64, bool) {
	r := o.get(path)
	if r.Type != gjson.Number || strings.ContainsAny(r.Raw, ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(r.Raw, 10, 64)
	return n, err == nil
}

// str reads a string at path, or def when it is missing or not a string.
func (o object) str(path, def string) string {
	r := o.get(path)
	if r.Type != gjson.String {
		return def
	}
	return r.Str
}

// condition is one entry of status.conditions, the fields kstatus reads.
type condition struct {
	Type, Status, Reason, Message string
}

// conditions reads status.conditions. An error is a status or a list that
// is not what the API conventions describe (status not an object, a
// condition's field not a string): kstatus cannot read such an object, and
// its health is Unknown.
func (o object) conditions() ([]condition, error) {
	st := o.get("status")
	if st.Exists() && st.Type != gjson.Null && !st.IsObject() {
		return nil, fmt.Errorf("status is not an object")
	}
	list := st.Get("conditions")
	if !list.Exists() || list.Type == gjson.Null {
		return nil, nil
	}
	if !list.IsArray() {
		return nil, fmt.Errorf("status.conditions is not a list")
	}
	var out []condition
	var err error
	list.ForEach(func(_, c gjson.Result) bool {
		if c.Type == gjson.Null {
			out = append(out, condition{})
			return true
		}
		if !c.IsObject() {
			err = fmt.Errorf("status.conditions holds %s, not a condition", c.Raw)
			return false
		}
		var cd condition
		for _, f := range []struct {
			key string
			to  *string
		}{{"type", &cd.Type}, {"status", &cd.Status}, {"reason", &cd.Reason}, {"message", &cd.Message}} {
			v := c.Get(f.key)
			switch v.Type {
			case gjson.String:
				*f.to = v.Str
			case gjson.Null:
			default:
				err = fmt.Errorf("status.conditions: %s is %s, not a string", f.key, v.Raw)
				return false
			}
		}
		out = append(out, cd)
		return true
	})
	return out, err
}

// find returns the first condition of type t with status s.
func find(cs []condition, t, s string) (condition, bool) {
	for _, c := range cs {
		if c.Type == t && c.Status == s {
			return c, true
		}
	}
	return condition{}, false
}
