package main

import (
	"log/slog"
	"net/http"
	"net/url"

	"github.com/dynwatch/dynwatch/plan"
)

// logProxies says, for each webhook whose URL the environment's proxy settings
// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, as Go reads them) send through a proxy,
// which proxy host sees its URLs and headers. The proxy's credentials and the
// webhook's URL, which may hold a token, are not logged.
func logProxies(log *slog.Logger, file *plan.File) {
	for _, a := range file.Config.Actions {
		if a.Webhook == nil {
			continue
		}
		u, err := url.Parse(a.Webhook.URL)
		if err != nil {
			continue // config has reported it
		}
		proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u})
		switch {
		case err != nil:
			log.Warn("webhook: the proxy in the environment does not parse; deliveries will fail", "action", a.Name, "err", err)
		case proxy != nil:
			log.Info("webhook deliveries go through a proxy (from HTTPS_PROXY or HTTP_PROXY; NO_PROXY exempts hosts)", "action", a.Name, "proxy", proxy.Host)
		}
	}
}
