// Package tail follows several resource types at once from a shell: one line per
// event (a table) or one payload per line (JSON), filtered by typed --where
// expressions.
//
// It uses dyninformer and rules directly and must not import the daemon's
// packages (watcher, daemon, state).
package tail
