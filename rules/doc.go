// Package rules holds compiled rules: conditions compiled through one operator
// table, and the one function that decides whether a rule fires on an event
// (Rule.Fires, with Rule.Explain recording the same checks for `test
// --explain`).
//
// It imports config (the schema it compiles), payload, discovery (selectors)
// and event; never plan, action, state or the daemon.
package rules
