package accessrules

import "testing"

func TestNormalizePath(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"/", "/", true},
		{"/admin", "/admin", true},
		{"/admin/", "/admin", true},
		{"/Admin/", "/admin", true},
		{"/ADMIN/x", "/admin/x", true},
		{"/AdMiN/Users", "/admin/users", true},
		{"/admin;/", "/admin", true},
		{"/admin;jsessionid=1/x", "/admin/x", true},
		{"/public/..;/admin", "/admin", true},
		{"/admin%20/", "/admin ", true},
		{"/admin./", "/admin", true},
		{"/admin.", "/admin", true},
		{"/admin%2e/", "/admin", true},
		{"/admin%2E%2E/x", "/admin/x", true},
		{"/public/%2e%2e/admin", "/admin", true},
		{"/public%2F..%2Fadmin", "/admin", true},
		{"/public%2fadmin", "/public/admin", true},
		{"/public/%252e%252e/admin", "/admin", true},
		{"/public/../admin", "/admin", true},
		{"/public/./../../../admin", "/admin", true},
		{"//admin", "/admin", true},
		{"/public//..//admin//x", "/admin/x", true},
		{`/public\..\admin`, "/admin", true},
		{"/public/%5c..%5cadmin", "/admin", true},
		{"/admin?x=/public", "/admin", true},
		{"/admin#frag", "/admin", true},
		{"http://evil/admin", "/admin", true},
		{"HTTPS://evil", "/", true},
		{"/100%25off", "/100%25off", true},
		{"/%25", "/%25", true},
		{"/%2525", "/%25", true},
		{"/%254", "/%254", true},
		{"/%23", "/%23", true},
		{"/a%3Fb", "/a%3fb", true},
		{"/a%253fb?x", "/a%3fb", true},
		{"/%", "", false},
		{"/a/.../b", "/a/b", true},
		{"/ADMİN", "/admin", true},
		{"", "", false},
		{"admin", "", false},
		{"/admin%zz", "", false},
		{"/admin%2", "", false},
		{"/admin%00", "", false},
		{"/admin%0a", "", false},
		{"/admin%ff", "", false},
		{"/%c0%af", "", false},
	} {
		got, ok := NormalizePath(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("NormalizePath(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestNormalizedPathAllocatesNothing(t *testing.T) {
	for _, p := range []string{"/", "/api/orders/42", "/public/app.js"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = NormalizePath(p) }); n != 0 {
			t.Errorf("NormalizePath(%q): %v allocations", p, n)
		}
	}
}
