package action

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

// Webhook sends payloads over HTTP on a transport of its own, never the
// process-wide default one, so that its TLS settings and timeouts are its own.
type Webhook struct {
	url string
	// where is the URL as logs and errors show it (config.RedactURL): scheme
	// and host only, since a path or query often holds a token (Slack, Teams).
	where string
	webhookRequests
	client *http.Client
	// secrets are masked in what a refusing receiver answers: it may say
	// back the credential it refused.
	secrets *config.Secrets
}

// NewWebhook builds a webhook from a validated spec (headers already expanded)
// and its compiled body template (nil: the payload JSON).
func NewWebhook(spec *config.WebhookSpec, body *template.Template) (*Webhook, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if spec.TLS != nil {
		tlsCfg.InsecureSkipVerify = spec.TLS.InsecureSkipVerify
		if spec.TLS.CAFile != "" {
			pem, err := os.ReadFile(spec.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("read tls.caFile: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("tls.caFile %s holds no PEM certificate", spec.TLS.CAFile)
			}
			tlsCfg.RootCAs = pool
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsCfg
	// Keep a connection per concurrent delivery rather than the default two.
	transport.MaxIdleConnsPerHost = 32
	w := &Webhook{
		url:             spec.URL,
		where:           config.RedactURL(spec.URL),
		webhookRequests: webhookRequests{method: spec.Method, headers: spec.Headers},
		client: &http.Client{
			Transport: transport,
			Timeout:   spec.Timeout.Std(),
			// A webhook goes only where the config says: a redirect is an answer,
			// not an instruction to send the event somewhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	w.body = body
	return w, nil
}

// Send makes one attempt. 2xx is success; 408, 429 and 5xx are retried
// (honouring Retry-After); any other status, a redirect included, is permanent.
func (w *Webhook) Send(ctx context.Context, d *event.Delivery) error {
	body, header, err := w.request(d)
	if err != nil {
		return &Failure{Err: err, Permanent: true}
	}
	req, err := http.NewRequestWithContext(ctx, w.method, w.url, bytes.NewReader(body))
	if err != nil {
		return &Failure{Err: err, Permanent: true}
	}
	req.Header = header
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the whole URL
		}
		return fmt.Errorf("%s %s: %w", w.method, w.where, err) // network errors and timeouts are retried
	}
	defer resp.Body.Close()
	// The answer's first bytes, and enough more to see a secret that
	// straddles them whole (to mask it).
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, int64(answerHead+w.secrets.Longest())))
	n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // lets the connection be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	f := &Failure{Err: fmt.Errorf("%s %s: %s: %s", w.method, w.where, resp.Status, w.answer(snippet, n > 0))}
	switch {
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		f.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		f.Throttled = resp.StatusCode == http.StatusTooManyRequests
	default:
		f.Permanent = true
	}
	return f
}

// webhookRequests makes a delivery's request, what Send sends and Render
// shows: its body and headers.
type webhookRequests struct {
	method  string
	headers map[string]string
	body    *template.Template
	// format, when set and there is no body template, renders the request
	// (cloudevents, slack, teams); nil sends the payload JSON.
	format bodyFormat
}

// request renders d's request body (its body template, else its format,
// else the payload JSON) and headers.
func (w webhookRequests) request(d *event.Delivery) ([]byte, http.Header, error) {
	body := d.JSON
	if w.body != nil {
		var buf bytes.Buffer
		if err := w.body.Execute(&buf, payload.TemplateData(d.JSON)); err != nil {
			return nil, nil, fmt.Errorf("render body: %w", err)
		}
		body = buf.Bytes()
	}
	var formatHeader map[string]string
	if w.body == nil && w.format != nil {
		var err error
		if body, formatHeader, err = w.format(d); err != nil {
			return nil, nil, fmt.Errorf("render message: %w", err)
		}
	}
	h := http.Header{}
	// The payload is JSON; so is a template's output when it parses as JSON
	// (Slack, Teams). headers, set after, may say otherwise.
	if w.body == nil || json.Valid(body) {
		h.Set("Content-Type", "application/json")
	}
	h.Set("User-Agent", "dynwatch")
	if d.Group == nil {
		// A group is several events (their ids in the body): its first
		// one's id would name a group formed again with others too.
		h.Set("X-Dynwatch-Event-Id", d.Payload.ID)
	}
	h.Set("X-Dynwatch-Delivery-Id", DeliveryID(d))
	for k, v := range formatHeader {
		h.Set(k, v)
	}
	for k, v := range w.headers {
		h.Set(k, v)
	}
	return body, h, nil
}

// answerHead is how much of a refusing receiver's answer an error shows.
const answerHead = 512

// answer is the first answerHead bytes of a receiver's answer, the
// config's secrets masked; cut says the answer went on past head.
func (w *Webhook) answer(head []byte, cut bool) string {
	text := string(head)
	if cut {
		text = w.secrets.MaskHead(text)
	} else {
		text = w.secrets.Mask(text)
	}
	if len(text) > answerHead {
		text = text[:answerHead]
	}
	return strings.TrimSpace(text)
}

// Close closes the webhook's idle connections, once its queue has stopped
// (an action a reload retired or replaced): they would otherwise stay open
// until the transport's idle timeout.
func (w *Webhook) Close() error {
	w.client.CloseIdleConnections()
	return nil
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
