package quotes

import "testing"

func TestIsCurrency(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]bool{"EUR": true, "USD": true, "JPY": true, "IDR": true, "XYZ": false, "eur": false, "XXX": false, "HRK": false, "": false} {
		if IsCurrency(code) != want {
			t.Errorf("IsCurrency(%q) = %v", code, !want)
		}
	}
}
