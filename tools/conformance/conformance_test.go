package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/flags"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// Our flags; the upstream suite registers its own (-conformance-profiles,
// -run-test, -usable-address, -debug, ...), which still apply.
var (
	repoRoot   = flag.String("repo-root", "../..", "Coxswain repository root")
	coreOnly   = flag.Bool("core-only", false, "run only the core tests of the selected profiles")
	reportsDir = flag.String("reports-dir", "", "where reports go (default <repo-root>/conformance/reports; a temp dir for -run-test)")
)

const (
	gatewayClassName = "coxswain"
	defaultProfile   = suite.GatewayHTTPConformanceProfileName
	// How long the GatewayClass may take to show Accepted with its features.
	gatewayClassWait = 3 * time.Minute
)

var implementation = struct{ organization, project, url, contact string }{
	organization: "coxswain-labs",
	project:      "coxswain",
	url:          "https://github.com/coxswain-labs/coxswain",
	contact:      "@coxswain-labs/maintainers",
}

func TestConformance(t *testing.T) {
	if os.Getenv("KUBECONFIG") == "" {
		t.Skip("KUBECONFIG is not set: run scripts/conformance.sh")
	}
	started := time.Now()
	opts := conformance.DefaultOptions(t)
	if opts.GatewayClassName == flags.DefaultGatewayClassName {
		opts.GatewayClassName = gatewayClassName
	}
	if len(opts.ConformanceProfiles) == 0 {
		opts.ConformanceProfiles = profilesFromEnv()
	}
	version := fillImplementation(t, &opts)

	claimed := mustMatchRustFeatures(t, opts.Client, opts.GatewayClassName)
	mode := "full"
	supported := make([]features.FeatureName, 0, len(claimed))
	for _, f := range claimed {
		supported = append(supported, features.FeatureName(f))
	}
	switch {
	case *coreOnly:
		// Claim only the profiles' core features, so extended tests are not run.
		mode = "core-only"
		opts.SupportedFeatures = coreFeatures(t, opts.ConformanceProfiles)
		supported = opts.SupportedFeatures
	case opts.RunTest != "":
		// The suite does not read the GatewayClass when one test is selected.
		mode = "single test " + opts.RunTest
		for _, f := range claimed {
			opts.SupportedFeatures = append(opts.SupportedFeatures, features.FeatureName(f))
		}
	default:
		// Claim what the selected profiles hold of the list just checked
		// against Rust: a run of one profile (say the dedicated-pools run
		// of GATEWAY-HTTP) does not also run the other profiles' tests.
		opts.SupportedFeatures = profileFeatures(t, opts.ConformanceProfiles, claimed)
		supported = opts.SupportedFeatures
	}

	dir, base := reportLocation(t, opts, started)
	if opts.ReportOutputPath == "" {
		opts.ReportOutputPath = filepath.Join(dir, base+".yaml")
	}
	recorder := NewRecorder()
	opts.Hook = recorder.Hook

	// Registered before the suite's own cleanup, so it runs after the
	// upstream report is written (cleanups run last-in first-out).
	t.Cleanup(func() {
		info := RunInfo{
			Profiles:  opts.ConformanceProfiles,
			Mode:      mode,
			ImplMode:  opts.Mode,
			Version:   version,
			Claimed:   claimed,
			Duration:  time.Since(started),
			ReportRef: opts.ReportOutputPath,
		}
		if report, err := ReadReport(opts.ReportOutputPath); err == nil {
			info.Report = report
			info.ReportRef = filepath.Base(opts.ReportOutputPath)
		} else {
			t.Logf("upstream report not readable: %v", err)
		}
		summary, err := filepath.Abs(filepath.Join(dir, base+".md"))
		if err != nil {
			t.Errorf("summary path: %v", err)
			return
		}
		if err := os.WriteFile(summary, []byte(RenderSummary(info, recorder.Records())), 0o644); err != nil {
			t.Errorf("writing summary: %v", err)
			return
		}
		t.Logf("summary written to %s", summary)
		if opts.RunTest == "" {
			expected := Expected(tests.ConformanceTests, opts.ConformanceProfiles, supported)
			missing := NotPassed(expected, recorder.Records())
			if len(missing) > 0 {
				t.Errorf("%d of %d expected tests did not pass: %v", len(missing), len(expected), missing)
			} else {
				t.Logf("all %d expected tests passed", len(expected))
			}
		}
	})

	conformance.RunConformanceWithOptions(t, opts)
}

func profilesFromEnv() []suite.ConformanceProfileName {
	value := os.Getenv("COXSWAIN_CONFORMANCE_PROFILES")
	if value == "" {
		return []suite.ConformanceProfileName{defaultProfile}
	}
	return suite.ParseConformanceProfilesSlice(value)
}

// fillImplementation sets the fields the command line left empty and returns
// the version used.
func fillImplementation(t *testing.T, opts *suite.ConformanceOptions) string {
	impl := &opts.Implementation
	if impl.Organization == "" {
		impl.Organization = implementation.organization
	}
	if impl.Project == "" {
		impl.Project = implementation.project
	}
	if impl.URL == "" {
		impl.URL = implementation.url
	}
	if len(impl.Contact) == 0 {
		impl.Contact = []string{implementation.contact}
	}
	if impl.Version == "" {
		impl.Version = os.Getenv("COXSWAIN_VERSION")
	}
	if impl.Version == "" {
		v, err := ReadWorkspaceVersion(filepath.Join(*repoRoot, "Cargo.toml"))
		if err != nil {
			t.Fatalf("implementation version: %v", err)
		}
		impl.Version = "v" + v
	}
	return impl.Version
}

// mustMatchRustFeatures waits for the GatewayClass to be Accepted with its
// supportedFeatures, and fails unless they equal the Rust list.
func mustMatchRustFeatures(t *testing.T, c client.Client, name string) []string {
	rust, err := ReadRustFeatures(filepath.Join(*repoRoot, FeaturesSourcePath))
	if err != nil {
		t.Fatal(err)
	}
	advertised, err := waitForGatewayClassFeatures(c, name, gatewayClassWait)
	if err != nil {
		t.Fatal(err)
	}
	missing, extra := diffFeatures(rust, advertised)
	if len(missing)+len(extra) > 0 {
		t.Fatalf("GatewayClass %s advertises features that differ from %s: missing %v, extra %v",
			name, FeaturesSourcePath, missing, extra)
	}
	t.Logf("GatewayClass %s advertises %d features, equal to %s", name, len(advertised), FeaturesSourcePath)
	return advertised
}

func waitForGatewayClassFeatures(c client.Client, name string, limit time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	lastState := "not read yet"
	for {
		gwc := &gatewayv1.GatewayClass{}
		err := c.Get(ctx, types.NamespacedName{Name: name}, gwc)
		switch {
		case err != nil:
			lastState = err.Error()
		case !meta.IsStatusConditionTrue(gwc.Status.Conditions, string(gatewayv1.GatewayClassConditionStatusAccepted)):
			lastState = "not Accepted"
		case len(gwc.Status.SupportedFeatures) == 0:
			lastState = "Accepted without supportedFeatures"
		default:
			names := make([]string, 0, len(gwc.Status.SupportedFeatures))
			for _, f := range gwc.Status.SupportedFeatures {
				names = append(names, string(f.Name))
			}
			slices.Sort(names)
			return names, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("GatewayClass %s after %s: %s", name, limit, lastState)
		case <-ticker.C:
		}
	}
}

func coreFeatures(t *testing.T, profiles []suite.ConformanceProfileName) []features.FeatureName {
	var out []features.FeatureName
	for _, name := range profiles {
		profile, ok := knownProfiles[name]
		if !ok {
			t.Fatalf("unknown conformance profile %q", name)
		}
		for _, f := range profile.CoreFeatures.UnsortedList() {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return out
}

// profileFeatures is claimed without the features that only other profiles
// hold (a feature of no profile, such as GRPCRouteNamedRouteRule, stays):
// a run of one profile does not run the other profiles' tests.
func profileFeatures(t *testing.T, profiles []suite.ConformanceProfileName, claimed []string) []features.FeatureName {
	in := func(p suite.ConformanceProfile, f features.FeatureName) bool {
		return p.CoreFeatures.Has(f) || p.ExtendedFeatures.Has(f)
	}
	for _, name := range profiles {
		if _, ok := knownProfiles[name]; !ok {
			t.Fatalf("unknown conformance profile %q", name)
		}
	}
	var out []features.FeatureName
	for _, f := range claimed {
		feature := features.FeatureName(f)
		selected, elsewhere := false, false
		for name, profile := range knownProfiles {
			if !in(profile, feature) {
				continue
			}
			if slices.Contains(profiles, name) {
				selected = true
			} else {
				elsewhere = true
			}
		}
		if selected || !elsewhere {
			out = append(out, feature)
		}
	}
	slices.Sort(out)
	return out
}

// reportLocation names reports <date>-<profiles>[-<mode>][-core].{yaml,md},
// where <mode> is the suite's -mode (the implementation's operating mode)
// unless it is the default one: the dedicated-pools run
// (scripts/conformance.sh --dedicated) is reported apart from the shared
// one. Single-test runs go to a temp dir so they never overwrite a full
// run's report.
func reportLocation(t *testing.T, opts suite.ConformanceOptions, started time.Time) (dir, base string) {
	names := make([]string, len(opts.ConformanceProfiles))
	for i, p := range opts.ConformanceProfiles {
		names[i] = strings.ToLower(string(p))
	}
	base = started.UTC().Format("2006-01-02") + "-" + strings.Join(names, "+")
	if opts.Mode != "" && opts.Mode != flags.DefaultMode {
		base += "-" + opts.Mode
	}
	if *coreOnly {
		base += "-core"
	}
	dir = *reportsDir
	if dir == "" && opts.RunTest != "" {
		dir = filepath.Join(os.TempDir(), "coxswain-conformance-reports")
		base += "-" + opts.RunTest
	}
	if dir == "" {
		dir = filepath.Join(*repoRoot, "conformance", "reports")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, base
}
