package config

import "testing"

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"https://hooks.slack.com/services/T0/B0/S3CRET", "https://hooks.slack.com/…"},
		{"https://example.com/hook?key=S3CRET", "https://example.com/…"},
		{"nats://user:pa55@nats:4222", "nats://nats:4222/…"},
		{"http://nats:4222/", "http://nats:4222"},
		{"hooks.example.com/T0KEN", "hooks.example.com…"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
