package health

import (
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
)

// The statuses, as kstatus names them.
const (
	Current     = "Current"
	InProgress  = "InProgress"
	Failed      = "Failed"
	Terminating = "Terminating"
	Unknown     = "Unknown"
)

// Statuses are the five statuses, in the order a user reads them.
var Statuses = []string{Current, InProgress, Failed, Terminating, Unknown}

// IsStatus reports whether s is one of Statuses.
func IsStatus(s string) bool {
	for _, x := range Statuses {
		if s == x {
			return true
		}
	}
	return false
}

func h(status, format string, args ...any) event.Health {
	if len(args) == 0 {
		return event.Health{Status: status, Message: format}
	}
	return event.Health{Status: status, Message: fmt.Sprintf(format, args...)}
}

// unknown is the health of an object kstatus cannot read (it returns an
// error; its poller reports Unknown).
func unknown(err error) event.Health { return h(Unknown, "%v", err) }

// Generic computes the health kstatus computes: the generic properties first
// (deletion, generation, Reconciling and Stalled), then the rules of the
// built-in kind if it is one, then a Ready condition, and else Current. group
// and kind name the object's kind; now is the time a Pod's scheduling window
// is measured against.
func Generic(group, kind string, obj []byte, now time.Time) event.Health {
	o := object(obj)
	if res, done := genericProperties(o, kind); done {
		return res
	}
	if rule := builtin(group, kind); rule != nil {
		return rule(o, kind, now)
	}
	cs, err := o.conditions()
	if err != nil {
		return unknown(err)
	}
	for _, c := range cs {
		if c.Type != "Ready" {
			continue
		}
		switch c.Status {
		case "True":
			return h(Current, "Resource is Ready")
		case "False", "Unknown":
			// kstatus cannot tell a Ready False that is progressing from
			// one that is doomed: both are InProgress.
			return event.Health{Status: InProgress, Message: c.Message}
		}
	}
	return h(Current, "Resource is current")
}

// genericProperties is what every kind shares: a deletion timestamp, a
// generation not yet observed, and the Reconciling and Stalled conditions
// (abnormal-true: they are set True while something is wrong). done is false
// when they decide nothing.
func genericProperties(o object, kind string) (event.Health, bool) {
	if dt := o.get("metadata.deletionTimestamp"); dt.Exists() {
		if dt.Type != gjson.String {
			return unknown(fmt.Errorf("metadata.deletionTimestamp is %s, not a string", dt.Raw)), true
		}
		if dt.Str != "" {
			return h(Terminating, "Resource scheduled for deletion"), true
		}
	}
	if res, done := generation(o, kind); done {
		return res, true
	}
	cs, err := o.conditions()
	if err != nil {
		return unknown(err), true
	}
	for _, c := range cs {
		switch {
		case c.Type == "Reconciling" && c.Status == "True":
			return event.Health{Status: InProgress, Message: c.Message}, true
		case c.Type == "Stalled" && c.Status == "True":
			return event.Health{Status: Failed, Message: c.Message}, true
		}
	}
	return event.Health{}, false
}

// generation: an object whose controller has not yet seen its latest spec
// (status.observedGeneration behind metadata.generation) is InProgress. An
// object without either says nothing here.
func generation(o object, kind string) (event.Health, bool) {
	gen, ok, err := int64At(o, "metadata.generation")
	if err != nil || !ok {
		return unknown(err), err != nil
	}
	obs, ok, err := int64At(o, "status.observedGeneration")
	if err != nil {
		return unknown(err), true
	}
	if ok && obs != gen {
		return h(InProgress, "%s generation is %d, but latest observed generation is %d", kind, gen, obs), true
	}
	return event.Health{}, false
}

// int64At reads an integer that must be one when present.
func int64At(o object, path string) (int64, bool, error) {
	r := o.get(path)
	if !r.Exists() {
		return 0, false, nil
	}
	n, ok := o.exactInt(path)
	if !ok {
		return 0, false, fmt.Errorf("%s is %s, not an integer", path, r.Raw)
	}
	return n, true, nil
}
