package webhooks

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/keyhash"
)

// TestSignStandardWebhooksVector signs the test vector the Standard Webhooks reference
// libraries publish (libraries/go/webhook_test.go, TestWebhookSign).
func TestSignStandardWebhooksVector(t *testing.T) {
	secret, err := base64.StdEncoding.DecodeString(strings.TrimPrefix("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", SecretPrefix))
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

// TestSecretDerivedPerWebhook: the secret is 32 bytes (the specification asks 24..64), the
// same for a webhook on every replica, different for another webhook or tenant, and shown
// with the whsec_ prefix around standard base64.
func TestSecretDerivedPerWebhook(t *testing.T) {
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	a := Secret(h, "acme", "wh_01")
	if len(a) != 32 {
		t.Fatalf("secret of %d bytes, want 32", len(a))
	}
	if string(a) != string(Secret(h, "acme", "wh_01")) {
		t.Fatal("the same webhook derived two secrets")
	}
	if string(a) == string(Secret(h, "acme", "wh_02")) || string(a) == string(Secret(h, "globex", "wh_01")) {
		t.Fatal("two webhooks share a secret")
	}
	s := FormatSecret(a)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, SecretPrefix))
	if !strings.HasPrefix(s, SecretPrefix) || err != nil || string(raw) != string(a) {
		t.Fatalf("FormatSecret = %q", s)
	}
}
