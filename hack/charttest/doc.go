// Package charttest tests the Helm chart in charts/dynwatch and the dashboard
// in deploy/grafana: it renders the chart with Helm's Go SDK, lints it, checks
// its RBAC against what `dynwatch rbac` prints for the rendered config, its
// pods against the restricted Pod Security level and every rendering against a
// real API server (a server-side dry run), runs the config check hook's
// container as its Job would (with a dynwatch it builds), and parses every
// PromQL expression of the dashboard and the alerts for metric names the code
// registers, and checks each alert's runbook page.
//
// It is a module of its own so that Helm's and Prometheus's dependency trees
// stay out of the product's go.mod; it uses the product's packages (rbac,
// plan, metrics, internal/testenv) through a replace of the root module.
package charttest
