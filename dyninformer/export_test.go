package dyninformer

// Objects returns what the informer of k holds now; nil when k is not
// watched. The objects are shared and read-only: Object.Unstructured decodes
// one into a copy. Only this package's tests read the cache directly.
func (m *Manager) Objects(k Key) []*Object {
	m.mu.Lock()
	e, ok := m.entries[k]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	items := e.store.List()
	out := make([]*Object, 0, len(items))
	for _, it := range items {
		if o, ok := it.(*Object); ok {
			out = append(out, o)
		}
	}
	return out
}
