package auth

import (
	"net/http/httptest"
	"testing"
)

func TestBearerToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		headers []string
		want    string
		wantOK  bool
	}{
		{"absent", nil, "", false},
		{"simple", []string{"Bearer abc.def.ghi"}, "abc.def.ghi", true},
		{"lower-case scheme", []string{"bearer abc"}, "abc", true},
		{"mixed-case scheme", []string{"BeArEr abc"}, "abc", true},
		{"extra whitespace", []string{"  Bearer    abc-_~+/=  "}, "abc-_~+/=", true},
		{"padding only", []string{"Bearer ==="}, "", false},
		{"empty token", []string{"Bearer "}, "", false},
		{"scheme only", []string{"Bearer"}, "", false},
		{"two tokens", []string{"Bearer abc def"}, "", false},
		{"comma separated", []string{"Bearer abc,def"}, "", false},
		{"tab inside", []string{"Bearer abc\tdef"}, "", false},
		{"basic scheme", []string{"Basic dXNlcjpwYXNz"}, "", false},
		{"scheme prefix", []string{"Bearerabc"}, "", false},
		{"two headers", []string{"Bearer abc", "Bearer def"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, ok := BearerToken(r)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("BearerToken = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
