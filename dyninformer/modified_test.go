package dyninformer

import (
	"testing"
	"time"
)

// The latest time of an object's managedFields is kept when they are cut
// out; a "time" field of the object elsewhere is not one of them.
func TestObjectModified(t *testing.T) {
	t.Parallel()
	obj := []byte(`{"metadata":{"name":"c","uid":"u","managedFields":[` +
		`{"manager":"a","operation":"Update","time":"2026-12-01T10:00:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:time":{}}}},` +
		`{"manager":"b","operation":"Update","time":"2026-12-01T10:00:09Z"},` +
		`{"manager":"c","operation":"Apply","time":"2026-12-01T09:59:59Z"}]},"data":{"time":"2030-01-01T00:00:00Z"}}`)
	o, err := parseObject(obj, "ConfigMap", "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 12, 1, 10, 0, 9, 0, time.UTC); !o.modifiedAt().Equal(want) {
		t.Errorf("modified %v, want %v", o.modifiedAt(), want)
	}
	none, err := parseObject([]byte(`{"metadata":{"name":"c","uid":"u"},"data":{"time":"2030-01-01T00:00:00Z"}}`), "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !none.modifiedAt().IsZero() {
		t.Errorf("without managedFields: modified %v", none.modifiedAt())
	}
}
