// Package discovery enumerates the group/version/resources an API server serves
// and resolves rule selectors to them. What can be told of a kind without a
// cluster (its plural, whether a built-in kind is cluster-scoped) is guessed
// in guess.go, for `dynwatch test` and for selectors that name a kind.
//
// It imports no dynwatch package but event.
package discovery
