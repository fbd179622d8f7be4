package conformance

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"
)

// RunInfo describes a run for the summary header.
type RunInfo struct {
	Profiles  []suite.ConformanceProfileName
	Mode      string // "full", "core-only" or "single test <name>"
	ImplMode  string // the suite's -mode: "default" (shared proxies) or "dedicated"
	Version   string
	Claimed   []string
	Duration  time.Duration
	Report    *confv1.ConformanceReport // nil when it could not be read
	ReportRef string
}

// ReadReport loads the upstream report the suite wrote.
func ReadReport(path string) (*confv1.ConformanceReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	report := &confv1.ConformanceReport{}
	if err := yaml.Unmarshal(data, report); err != nil {
		return nil, err
	}
	return report, nil
}

// RenderSummary writes a markdown page readable at a glance: per profile the
// core/extended counts, failures, per-feature counts, then every test.
func RenderSummary(info RunInfo, records []TestRecord) string {
	var b strings.Builder
	names := make([]string, len(info.Profiles))
	for i, p := range info.Profiles {
		names[i] = string(p)
	}
	fmt.Fprintf(&b, "# Gateway API conformance: %s\n\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "- Implementation: coxswain %s\n", info.Version)
	if info.Report != nil {
		fmt.Fprintf(&b, "- Gateway API: %s (%s channel CRDs), report date %s\n",
			info.Report.GatewayAPIVersion, info.Report.GatewayAPIChannel, info.Report.Date)
	}
	fmt.Fprintf(&b, "- Mode: %s; run time %s\n", info.Mode, info.Duration.Round(time.Second))
	if info.ImplMode != "" && info.ImplMode != "default" {
		fmt.Fprintf(&b, "- Implementation mode: %s\n", info.ImplMode)
	}
	fmt.Fprintf(&b, "- Upstream report: %s\n", info.ReportRef)
	fmt.Fprintf(&b, "- Claimed features (GatewayClass status, equal to %s): %s\n\n",
		FeaturesSourcePath, strings.Join(info.Claimed, ", "))

	if len(records) == 0 {
		b.WriteString("**No test ran**: the suite's setup failed (GatewayClass, base Gateways or pods not ready); see the `go test` log.\n\n")
	}
	for _, name := range info.Profiles {
		profile, ok := knownProfiles[name]
		if !ok {
			continue
		}
		writeProfile(&b, TallyProfile(profile, records), upstreamProfile(info.Report, name), info.Claimed)
	}

	b.WriteString("## Every test\n\n| test | result | features |\n|---|---|---|\n")
	for _, rec := range records {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", rec.Name, rec.Outcome, joinFeatures(rec.Features))
	}
	return b.String()
}

func writeProfile(b *strings.Builder, tally ProfileTally, upstream *confv1.ProfileReport, claimed []string) {
	fmt.Fprintf(b, "## %s\n\n", tally.Name)
	b.WriteString("| | passed | failed | skipped | not supported |\n|---|---|---|---|---|\n")
	for _, row := range []struct {
		label  string
		counts Counts
	}{{"core", tally.Core}, {"extended", tally.Extended}} {
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d |\n", row.label,
			row.counts[Passed], row.counts[Failed], row.counts[Skipped], row.counts[NotSupported])
	}
	if upstream != nil {
		fmt.Fprintf(b, "\nUpstream report: core %s (%d passed, %d failed, %d skipped)",
			upstream.Core.Result, upstream.Core.Passed, upstream.Core.Failed, upstream.Core.Skipped)
		if upstream.Extended != nil {
			fmt.Fprintf(b, "; extended %s (%d passed, %d failed, %d skipped)",
				upstream.Extended.Result, upstream.Extended.Passed, upstream.Extended.Failed, upstream.Extended.Skipped)
		}
		b.WriteString(". It may count parallel tests late; the table above and `go test` are authoritative.\n")
	}
	if len(tally.Failed) > 0 {
		b.WriteString("\nFailed:\n\n")
		for _, rec := range tally.Failed {
			fmt.Fprintf(b, "- %s (%s)\n", rec.Name, joinFeatures(rec.Features))
		}
	}

	b.WriteString("\n| feature | claimed | passed | failed | skipped | not supported |\n|---|---|---|---|---|---|\n")
	featureNames := make([]features.FeatureName, 0, len(tally.PerFeature))
	for f := range tally.PerFeature {
		featureNames = append(featureNames, f)
	}
	slices.Sort(featureNames)
	for _, f := range featureNames {
		c := tally.PerFeature[f]
		mark := "no"
		if slices.Contains(claimed, string(f)) {
			mark = "yes"
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %d |\n", f, mark, c[Passed], c[Failed], c[Skipped], c[NotSupported])
	}
	b.WriteString("\n")
}

func upstreamProfile(report *confv1.ConformanceReport, name suite.ConformanceProfileName) *confv1.ProfileReport {
	if report == nil {
		return nil
	}
	for i := range report.ProfileReports {
		if report.ProfileReports[i].Name == string(name) {
			return &report.ProfileReports[i]
		}
	}
	return nil
}

func joinFeatures(fs []features.FeatureName) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, ", ")
}
