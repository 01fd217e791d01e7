// Package audit lists the current objects of every rule's resources once and
// reports those that satisfy a rule's conditions: a one-shot check for CI and
// compliance jobs. It lists through dyninformer.Client, so objects stay the
// JSON bytes the API server sent, and evaluates them with rules.Evaluator,
// asking of each object whether it satisfies a rule now (Rule.Holds).
//
// It starts from plan and must not import the daemon's packages (watcher,
// daemon, state).
package audit
