// Package dyninformer runs one informer per watched resource and namespace
// scope, started and stopped while the program runs, and turns what
// they see into events whose objects are JSON bytes.
//
// Its informers never decode objects into maps: list pages and watch frames are
// split into each object's JSON bytes (managedFields cut out), and the cache
// keeps those bytes and the few metadata fields it needs (Object). Events carry
// the cached bytes as they are; nothing is marshalled per event.
//
// It knows nothing of rules or actions: it imports no dynwatch package but
// event.
package dyninformer
