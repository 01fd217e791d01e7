package plan

// ForCluster returns the file with only the rules that apply to the named
// cluster (rules[].clusters; "" is the one cluster, to which every rule
// applies): what one cluster's watches are resolved from.
func (f *File) ForCluster(name string) *File {
	if name == "" {
		return f
	}
	applies := map[string]bool{}
	for i := range f.Config.Rules {
		applies[f.Config.Rules[i].Name] = f.Config.Rules[i].AppliesTo(name)
	}
	out := *f
	out.Rules = nil
	for _, r := range f.Rules {
		if applies[r.Name] {
			out.Rules = append(out.Rules, r)
		}
	}
	return &out
}
