package dyninformer

import "time"

// modifiedAt is when the object was last changed, as its managedFields say
// (zero: they said nothing).
func (o *Object) modifiedAt() time.Time {
	if o.modified == 0 {
		return time.Time{}
	}
	return time.Unix(o.modified, 0)
}
