package action

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
)

// A JSON body, the payload's or a template's, is sent as application/json
// unless headers say otherwise; a template whose output is not JSON gets no
// Content-Type; every request carries the delivery's key.
func TestWebhookContentTypeAndDeliveryID(t *testing.T) {
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	tests := []struct {
		name, keys, want string // keys: more keys of the webhook's spec
	}{
		{"the payload", ``, "application/json"},
		{"a JSON template", `, body: '{"text": {{ json .name }}}'`, "application/json"},
		{"a template that is not JSON", `, body: 'changed: {{ .name }}'`, ""},
		{"headers win", `, body: '{"a": 1}', headers: {content-type: application/vnd.custom+json}`, "application/vnd.custom+json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := webhook(t, fmt.Sprintf(`{url: %q%s}`, srv.URL, tt.keys))
			if err := w.Send(context.Background(), delivery("o", 1)); err != nil {
				t.Fatal(err)
			}
			got := rc.last(t)
			if ct := got.header.Get("Content-Type"); ct != tt.want {
				t.Errorf("Content-Type = %q, want %q", ct, tt.want)
			}
			if id := got.header.Get("X-Dynwatch-Delivery-Id"); id != "uid-o:1:update:r" {
				t.Errorf("X-Dynwatch-Delivery-Id = %q, want uid-o:1:update:r", id)
			}
		})
	}
}
