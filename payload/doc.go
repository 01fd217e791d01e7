// Package payload turns an event into what actions deliver: the payload with its
// fields and changed paths, Secret values redacted, and the functions webhook
// body templates may call. Everything here works on JSON bytes with gjson.
//
// It imports config (for the redact list) and event only; never rules, action
// or the daemon.
package payload
