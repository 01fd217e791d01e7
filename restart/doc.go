// Package restart is what restart state means for events: the comparison of
// an object, listed or live, with its record, as pure functions from an event
// and what the records hold of it to the events it fires. A listed object
// without a record is new (an add), one whose record has another version and
// other content changed while dynwatch was down (an update, evaluated against
// the recorded values), one whose name had another uid replays that uid's
// delete first, and a record whose object the list did not see replays a
// delete (Vanished, Gone). Record is what the file keeps of an object.
//
// It reads and writes nothing: the watcher reads the records in a
// transaction, compares here, routes what this returns to the actions,
// persists the deliveries and puts the new record, in that one transaction.
// It imports no dynwatch package but event and state (their types only: its
// tests need no bbolt).
package restart
