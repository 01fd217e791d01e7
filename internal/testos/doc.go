// Package testos holds the operating-system helpers several packages' tests
// share: a file size limit that makes writes fail as a full disk would, and a
// look at the process table for zombies. It imports nothing of dynwatch and
// no client library, so the lowest packages' tests may use it.
package testos
