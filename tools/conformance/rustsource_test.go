package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/gateway-api/pkg/features"
)

// Every name Rust claims must be a feature this suite version knows:
// a misspelt name would silently leave its tests unclaimed.
func TestRustFeaturesAreUpstreamFeatures(t *testing.T) {
	names, err := ReadRustFeatures(filepath.Join(*repoRoot, FeaturesSourcePath))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if features.GetFeature(features.FeatureName(name)).Name == "" {
			t.Errorf("%s claims %q, which gateway-api conformance does not know", FeaturesSourcePath, name)
		}
	}
	meshOnly := features.SetsToNamesSet(features.MeshCoreFeatures, features.MeshExtendedFeatures)
	for _, name := range names {
		if meshOnly.Has(features.FeatureName(name)) {
			t.Errorf("%s claims mesh feature %q in a GatewayClass", FeaturesSourcePath, name)
		}
	}
}

func TestReadRustFeaturesParsesTheArray(t *testing.T) {
	path := filepath.Join(t.TempDir(), "features.rs")
	src := `//! doc "NotAFeature"
/// comment
pub const SUPPORTED_FEATURES: &[&str] = &[
    "Gateway",
    // "Commented",
    "HTTPRoute", "ReferenceGrant",
];
const OTHER: &[&str] = &["Ignored"];
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRustFeatures(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Gateway", "HTTPRoute", "ReferenceGrant"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestReadRustFeaturesRejectsAnUnclosedArray(t *testing.T) {
	path := filepath.Join(t.TempDir(), "features.rs")
	if err := os.WriteFile(path, []byte("pub const SUPPORTED_FEATURES: &[&str] = &[\n \"Gateway\",\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRustFeatures(path); err == nil {
		t.Fatal("expected an error for an unclosed array")
	}
}

func TestWorkspaceVersionIsRead(t *testing.T) {
	version, err := ReadWorkspaceVersion(filepath.Join(*repoRoot, "Cargo.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if version == "" {
		t.Fatal("empty version")
	}
}

func TestFeatureListsDiffer(t *testing.T) {
	missing, extra := diffFeatures([]string{"A", "B"}, []string{"B", "C"})
	if !slices.Equal(missing, []string{"A"}) || !slices.Equal(extra, []string{"C"}) {
		t.Fatalf("missing %v extra %v", missing, extra)
	}
	missing, extra = diffFeatures([]string{"A"}, []string{"A"})
	if len(missing)+len(extra) != 0 {
		t.Fatalf("equal lists reported as different: %v %v", missing, extra)
	}
}
