// Package plan is what a config file means: Load compiles it (schema, rules,
// redaction, action kinds) into a File, and Resolve works out, against one
// discovery catalog, the resources each rule selects and the informers they
// need. The daemon, audit, rbac and tail all start here.
//
// It must not import the daemon's packages (watcher, daemon, state): audit,
// rbac and tail use it without linking them.
package plan
