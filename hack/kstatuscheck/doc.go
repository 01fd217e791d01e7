// Package kstatuscheck compares dynwatch's health (package health, which
// reads objects' JSON with gjson) with kstatus' (sigs.k8s.io/cli-utils
// pkg/kstatus/status, which it follows) on the same objects: fixtures modelled
// on kstatus' own cases, Deployments in each phase as the API server shows
// them, and custom resources with its standard conditions. It is a module of
// its own, so that cli-utils' dependency tree stays out of the product's
// go.mod; the replace in go.mod lets it use the product's packages (health,
// and internal/testenv, which Go's internal rule allows: this module's path
// lies under the root module's). make test runs it, as make kstatuscheck.
package kstatuscheck
