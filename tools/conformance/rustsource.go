package conformance

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// FeaturesSourcePath is where the Rust list of claimed features lives,
// relative to the repository root.
const FeaturesSourcePath = "crates/translate/src/features.rs"

var quotedString = regexp.MustCompile(`"([^"\\]*)"`)

// ReadRustFeatures returns the entries of SUPPORTED_FEATURES in features.rs,
// in source order. It understands the one layout that file uses: the array
// opens on the `SUPPORTED_FEATURES` line and closes with `];`.
func ReadRustFeatures(path string) ([]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()

	var names []string
	inList, closed := false, false
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if strings.HasPrefix(line, "//") {
			continue
		}
		if !inList {
			inList = strings.Contains(line, "SUPPORTED_FEATURES") && strings.Contains(line, "&[")
			continue
		}
		if strings.HasPrefix(line, "];") {
			closed = true
			break
		}
		for _, m := range quotedString.FindAllStringSubmatch(line, -1) {
			names = append(names, m[1])
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if !closed {
		return nil, fmt.Errorf("%s: no complete SUPPORTED_FEATURES array found", path)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: SUPPORTED_FEATURES is empty", path)
	}
	return names, nil
}

// ReadWorkspaceVersion returns the version in the [workspace.package]
// section of the workspace Cargo.toml (crates/coxswain inherits it).
func ReadWorkspaceVersion(cargoToml string) (string, error) {
	data, err := os.ReadFile(cargoToml)
	if err != nil {
		return "", err
	}
	section := ""
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if section != "[workspace.package]" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(key) == "version" {
			return strings.Trim(strings.TrimSpace(value), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no version in [workspace.package]", cargoToml)
}
