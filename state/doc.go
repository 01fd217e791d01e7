// Package state is dynwatch's restart state: per watched resource, what it last
// saw of each object (enough to tell what changed while it was down and to
// evaluate `changed` and `object: old` on it), the baseline of each resource
// and namespace scope, and each action's outbox (its durable queue). It lives
// in one bbolt file; an object's record advances in the same transaction as
// the deliveries its event produced.
//
// Records are kept per Resource, baselines per Scope (a resource in one
// namespace, or all of them); both carry a cluster's name for when several
// clusters share one file (empty: the one cluster, and the key a file has
// always had). The file's digest key makes the HMACs that stand for redacted
// values and for objects' content (Hash, DigestKey.Digest).
//
// It knows nothing of rules or the watcher: it imports no dynwatch package but
// fieldpath and event. What a record means for an event (the comparison after
// a restart) is package restart's.
package state
