// Package watcher is the daemon's pipeline: it resolves the rules' selectors
// through discovery, keeps one informer per watched resource and namespace scope,
// evaluates each event with the rules of its resource only, and hands matches to
// the action queues. The watched set follows the cluster (CRDs that appear or go)
// and the config (reloads) without a restart.
//
// It is the daemon's engine: only daemon (and tests) import it.
package watcher
