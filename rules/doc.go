// Package rules holds compiled rules: conditions compiled through one operator
// table; Rule.Decide, the one function that decides whether a rule fires on an
// event, returning one Verdict (fires, and the transition for fire: enter,
// exit and edges), used by run, tail, test and the tests alike; Rule.Explain,
// the same decision recording its steps for `test --explain`; and the
// Evaluator, the one loop of deciding a resource's rules on an event,
// preparing the event once and building each match's payload, that run's
// pipeline, tail, audit and test all call.
//
// It imports config (the schema it compiles), payload, discovery (selectors)
// and event; never plan, action, state or the daemon.
package rules
