// Package health computes an object's health: Current, InProgress, Failed,
// Terminating or Unknown, with a message, as kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus/status) computes it, over the object's
// JSON bytes; a config's health list gives a kind a CEL expression of its own
// instead. A Checker is the event.Deriver that rules, fields, audit and tail
// read as the paths health.status and health.message.
package health
