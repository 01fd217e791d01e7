// Package action delivers payloads to actions (log, webhook, exec, kafka, nats) through one
// bounded queue per action that keeps each object's events in order, delivers
// different objects in parallel, and retries failures. kinds.go is the table
// of action kinds.
//
// It imports config, payload and event; never rules, plan, state or the
// daemon (a durable queue is the watcher's, an Outbox in QueueOptions).
package action
