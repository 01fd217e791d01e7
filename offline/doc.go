// Package offline is `dynwatch test`'s logic: it reads objects from files
// (JSON or YAML, several documents, kind: List), names their resource without
// a cluster, and evaluates one rule on them as run would, through the one
// evaluator (rules.Evaluator).
//
// It needs no cluster and must not import the daemon's packages (watcher,
// daemon, state).
package offline
