package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// requiredVersion returns the version a go.mod requires for module, or "".
func requiredVersion(t *testing.T, goMod, module string) string {
	t.Helper()
	data, err := os.ReadFile(goMod)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return fields[1]
		}
	}
	return ""
}

// The suite and the CRDs the cluster installs must come from one Gateway API
// release (scripts/conformance.sh builds echo-basic from this module too).
func TestGatewayAPIVersionsAreEqual(t *testing.T) {
	const api, conf = "sigs.k8s.io/gateway-api", "sigs.k8s.io/gateway-api/conformance"
	want := requiredVersion(t, "go.mod", conf)
	if want == "" {
		t.Fatal("go.mod does not require the conformance module")
	}
	checks := []struct{ goMod, module string }{
		{"go.mod", api},
		{filepath.Join(*repoRoot, "tools/k8s/crds/go.mod"), api},
	}
	for _, c := range checks {
		if _, err := os.Stat(c.goMod); err != nil {
			t.Errorf("%s: %v", c.goMod, err)
			continue
		}
		if got := requiredVersion(t, c.goMod, c.module); got != want {
			t.Errorf("%s requires %s %q; the suite runs %s", c.goMod, c.module, got, want)
		}
	}
}
