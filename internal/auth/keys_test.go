package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestThumbprintRFC8037Vector(t *testing.T) {
	t.Parallel()
	// RFC 8037 Appendix A.2 / A.3.
	x, err := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Thumbprint(ed25519.PublicKey(x)), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
		t.Errorf("Thumbprint = %q, want %q", got, want)
	}
	// The RFC's private key (seed) maps to that public key; check ParseKeys agrees.
	ks := mustKeys(t, "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	if got := ks.SigningKID(); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Errorf("kid of RFC 8037 seed = %q", got)
	}
}

func writePEM(t *testing.T, blocks ...*pem.Block) string {
	t.Helper()
	var b strings.Builder
	for _, bl := range blocks {
		if err := pem.Encode(&b, bl); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "keys.pem")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func pkcs8Block(t *testing.T, key any) *pem.Block {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
}

func pkixBlock(t *testing.T, key any) *pem.Block {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &pem.Block{Type: "PUBLIC KEY", Bytes: der}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	priv1 := ed25519.NewKeyFromSeed(seed(1))
	priv2 := ed25519.NewKeyFromSeed(seed(2))
	pub1 := priv1.Public().(ed25519.PublicKey)
	pub2 := priv2.Public().(ed25519.PublicKey)
	kid1, kid2 := Thumbprint(pub1), Thumbprint(pub2)
	pemFile := writePEM(t, pkcs8Block(t, priv2), pkixBlock(t, pub1))

	type want struct {
		kids    []string
		canSign bool
	}
	tests := []struct {
		name string
		spec string
		want want
	}{
		{"std padded seed", base64.StdEncoding.EncodeToString(seed(1)), want{[]string{kid1}, true}},
		{"std raw seed", base64.RawStdEncoding.EncodeToString(seed(1)), want{[]string{kid1}, true}},
		{"url padded seed", base64.URLEncoding.EncodeToString(seed(1)), want{[]string{kid1}, true}},
		{"url raw seed", seedB64(1), want{[]string{kid1}, true}},
		{"pub only", "pub:" + base64.StdEncoding.EncodeToString(pub1), want{[]string{kid1}, false}},
		{"rotation order kept", seedB64(2) + ", pub:" + base64.RawURLEncoding.EncodeToString(pub1), want{[]string{kid2, kid1}, true}},
		{"empty entries ignored", " ," + seedB64(1) + ",, ", want{[]string{kid1}, true}},
		{"pem file", "file:" + pemFile, want{[]string{kid2, kid1}, true}},
		{"pub first cannot sign", "pub:" + base64.StdEncoding.EncodeToString(pub2) + "," + seedB64(1), want{[]string{kid2, kid1}, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ks := mustKeys(t, tt.spec)
			if got := ks.KIDs(); !slices.Equal(got, tt.want.kids) {
				t.Errorf("KIDs = %q, want %q", got, tt.want.kids)
			}
			if got := ks.CanSign(); got != tt.want.canSign {
				t.Errorf("CanSign = %v, want %v", got, tt.want.canSign)
			}
			for _, kid := range tt.want.kids {
				if _, ok := ks.PublicKey(kid); !ok {
					t.Errorf("PublicKey(%q) not found", kid)
				}
			}
		})
	}
}

func TestParseKeysErrors(t *testing.T) {
	t.Parallel()
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-sec"))
	long := base64.StdEncoding.EncodeToString([]byte("this-secret-is-forty-eight-bytes-long-secret-abc"))
	badB64 := "s3cr3t!!not*base64" + seedB64(9)[:10]
	tests := []struct {
		name    string
		spec    string
		secret  string // must not appear in the error
		wantErr string // substring
	}{
		{"empty spec", "", "", "no keys"},
		{"only commas", " , ,", "", "no keys"},
		{"bad base64 seed", badB64, badB64, "not valid base64"},
		{"short seed", short, short, "exactly 32 bytes"},
		{"long seed", long, long, "exactly 32 bytes"},
		{"second entry bad", seedB64(1) + "," + short, short, "entry 2"},
		{"bad base64 pub", "pub:" + badB64, badB64, "not valid base64"},
		{"short pub", "pub:" + short, short, "exactly 32 bytes"},
		{"duplicate key", seedB64(1) + "," + seedB64(1), seedB64(1), "duplicate"},
		{"seed and its pub", seedB64(1) + ",pub:" + base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed(1)).Public().(ed25519.PublicKey)), seedB64(1), "duplicate"},
		{"missing file", "file:" + filepath.Join(t.TempDir(), "nope.pem"), "", "read key file"},
		{"empty file path", "file:", "", "empty file path"},
		{"file without pem", "file:" + writePEM(t), "", "no PEM keys"},
		{"non-ed25519 private key", "file:" + writePEM(t, pkcs8Block(t, ecKey)), "", "not an Ed25519 private key"},
		{"non-ed25519 public key", "file:" + writePEM(t, pkixBlock(t, &ecKey.PublicKey)), "", "not an Ed25519 public key"},
		{"garbage pkcs8", "file:" + writePEM(t, &pem.Block{Type: "PRIVATE KEY", Bytes: []byte("garbage")}), "", "invalid PKCS#8"},
		{"unsupported block", "file:" + writePEM(t, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("x")}), "", "unsupported type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ks, err := ParseKeys(tt.spec)
			if err == nil {
				t.Fatalf("ParseKeys succeeded: %v", ks)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q echoes the input secret", err)
			}
		})
	}
}

func TestNewKeySetErrors(t *testing.T) {
	t.Parallel()
	priv := ed25519.NewKeyFromSeed(seed(1))
	other := ed25519.NewKeyFromSeed(seed(2)).Public().(ed25519.PublicKey)
	tests := []struct {
		name string
		keys []Key
	}{
		{"none", nil},
		{"no material", []Key{{ID: "x"}}},
		{"short private", []Key{{Private: priv[:10]}}},
		{"short public", []Key{{Public: other[:10]}}},
		{"mismatched pair", []Key{{Private: priv, Public: other}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := NewKeySet(tt.keys...); err == nil {
				t.Error("NewKeySet succeeded")
			}
		})
	}
	// A caller-supplied ID is ignored in favour of the thumbprint.
	ks, err := NewKeySet(Key{ID: "spoofed", Private: priv})
	if err != nil {
		t.Fatal(err)
	}
	if got := ks.SigningKID(); got != Thumbprint(priv.Public().(ed25519.PublicKey)) {
		t.Errorf("SigningKID = %q", got)
	}
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, seedB64(2)+",pub:"+base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed(1)).Public().(ed25519.PublicKey)))
	raw, err := ks.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("JWKS is not JSON: %v", err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("JWKS has %d keys, want 2", len(set.Keys))
	}
	for i, k := range set.Keys {
		if _, ok := k["d"]; ok {
			t.Errorf("key %d has private member d", i)
		}
		var names []string
		for name := range k {
			names = append(names, name)
		}
		slices.Sort(names)
		if want := []string{"alg", "crv", "kid", "kty", "use", "x"}; !slices.Equal(names, want) {
			t.Errorf("key %d members = %v, want %v", i, names, want)
		}
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["use"] != "sig" || k["alg"] != "EdDSA" {
			t.Errorf("key %d = %v", i, k)
		}
		x, err := base64.RawURLEncoding.DecodeString(k["x"].(string))
		if err != nil || len(x) != ed25519.PublicKeySize {
			t.Fatalf("key %d: bad x: %v", i, err)
		}
		if kid := k["kid"]; kid != ks.KIDs()[i] || kid != Thumbprint(x) {
			t.Errorf("key %d: kid %v, want %v (thumbprint %v)", i, kid, ks.KIDs()[i], Thumbprint(x))
		}
	}
	for _, secret := range secretForms(seed(2)) {
		if strings.Contains(string(raw), secret) {
			t.Errorf("JWKS contains private material %q", secret)
		}
	}
}

// secretForms returns encodings of a seed that must never be printed.
func secretForms(s []byte) []string {
	priv := ed25519.NewKeyFromSeed(s)
	return []string{
		base64.StdEncoding.EncodeToString(s)[:40],
		base64.RawURLEncoding.EncodeToString(s)[:40],
		base64.StdEncoding.EncodeToString(priv)[:40],
		hex.EncodeToString(s)[:40],
		fmt.Sprint([]byte(s))[:40],
		fmt.Sprint([]byte(priv))[:40],
		string(s),
	}
}

func TestKeySetMasking(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, seedB64(7))
	key := ks.keys[0]
	var logBuf strings.Builder
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("keys", "ks", ks, "key", key)
	outputs := []string{logBuf.String()}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%d", "%q"} {
		outputs = append(outputs,
			fmt.Sprintf(verb, ks), fmt.Sprintf(verb, *ks),
			fmt.Sprintf(verb, key), fmt.Sprintf(verb, &key),
			fmt.Sprintf(verb, []Key{key}),
		)
	}
	j, err := json.Marshal(key)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(j))
	for _, out := range outputs {
		for _, secret := range secretForms(seed(7)) {
			if strings.Contains(out, secret) {
				t.Errorf("output %q reveals private material", out)
			}
		}
	}
	if s := ks.String(); !strings.Contains(s, ks.SigningKID()) || !strings.Contains(s, "***") {
		t.Errorf("String() = %q, want kid and mask", s)
	}
}

func TestSeedStringRoundTrip(t *testing.T) {
	t.Parallel()
	ks, err := GenerateKeySet()
	if err != nil {
		t.Fatal(err)
	}
	if !ks.CanSign() || len(ks.KIDs()) != 1 {
		t.Fatalf("GenerateKeySet = %v", ks)
	}
	again := mustKeys(t, ks.SeedString())
	if again.SigningKID() != ks.SigningKID() {
		t.Errorf("ParseKeys(SeedString()) kid = %q, want %q", again.SigningKID(), ks.SigningKID())
	}
	other, err := GenerateKeySet()
	if err != nil {
		t.Fatal(err)
	}
	if other.SigningKID() == ks.SigningKID() {
		t.Error("GenerateKeySet returned the same key twice")
	}
	pub := ks.PublicOnly()
	if pub.CanSign() || pub.SeedString() != "" || pub.SigningKID() != "" {
		t.Errorf("PublicOnly still signs: %v", pub)
	}
	if !slices.Equal(pub.KIDs(), ks.KIDs()) {
		t.Errorf("PublicOnly KIDs = %v, want %v", pub.KIDs(), ks.KIDs())
	}
}
