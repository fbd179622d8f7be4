//! Maps container images to local binaries.
//!
//! A rule reads `PATTERN=PATH [DEFAULT_ARGS...]`. PATTERN is a glob over the
//! whole image reference (`*` matches any run of characters, `?` one
//! character). The first matching rule wins.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRule {
    pub pattern: String,
    pub binary: PathBuf,
    /// Used when the container gives neither `command` nor `args`.
    pub default_args: Vec<String>,
}

impl ImageRule {
    pub fn parse(text: &str) -> Result<Self, String> {
        let (pattern, rest) = text
            .split_once('=')
            .ok_or_else(|| format!("image map rule {text:?} is not PATTERN=PATH"))?;
        let mut words = rest.split_whitespace();
        let binary = words
            .next()
            .ok_or_else(|| format!("image map rule {text:?} has no binary path"))?;
        let pattern = pattern.trim();
        if pattern.is_empty() {
            return Err(format!("image map rule {text:?} has an empty pattern"));
        }
        Ok(Self {
            pattern: pattern.to_string(),
            binary: PathBuf::from(binary),
            default_args: words.map(str::to_string).collect(),
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct ImageMap {
    rules: Vec<ImageRule>,
}

/// What to execute for one container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl ImageMap {
    pub fn new(rules: Vec<ImageRule>) -> Self {
        Self { rules }
    }

    /// Reads rules from a file: one per line, `#` starts a comment.
    pub fn parse_file(text: &str) -> Result<Vec<ImageRule>, String> {
        text.lines()
            .map(|line| line.split('#').next().unwrap_or("").trim())
            .filter(|line| !line.is_empty())
            .map(ImageRule::parse)
            .collect()
    }

    pub fn rule_for(&self, image: &str) -> Option<&ImageRule> {
        self.rules
            .iter()
            .find(|rule| glob_match(&rule.pattern, image))
    }

    /// The process for a container. The mapped binary replaces the image's
    /// entrypoint, so `command[0]` (a path inside the image) is dropped and
    /// the rest of `command` followed by `args` becomes the argument list.
    pub fn launch(&self, image: &str, command: &[String], args: &[String]) -> Option<Launch> {
        let rule = self.rule_for(image)?;
        let args = if let Some((_, rest)) = command.split_first() {
            rest.iter().chain(args).cloned().collect()
        } else if !args.is_empty() {
            args.to_vec()
        } else {
            rule.default_args.clone()
        };
        Some(Launch {
            program: rule.binary.clone(),
            args,
        })
    }
}

/// Glob match over chars: `*` any run (also empty), `?` exactly one.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0usize, 0usize);
    // Position of the last `*` and the text position it is matched up to.
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                backtrack = Some((p, t));
                p += 1;
            }
            Some(c) if *c == '?' || Some(c) == text.get(t) => {
                p += 1;
                t += 1;
            }
            _ => match backtrack {
                Some((star, matched)) => {
                    p = star + 1;
                    t = matched + 1;
                    backtrack = Some((star, matched + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn glob_matches_stars_and_question_marks() {
        assert!(glob_match(
            "*echo-basic*",
            "gcr.io/k8s-staging-gateway-api/echo-basic:v20240412"
        ));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(!glob_match("*echo-basic*", "registry/echo-advanced:v1"));
        assert!(!glob_match("abc", "abcd"));
        assert!(glob_match("*:v1", "x/y:v1"));
        assert!(!glob_match("*:v1", "x/y:v12"));
    }

    #[test]
    fn parses_rules_with_default_args() {
        let rule =
            ImageRule::parse("*coxswain*=/opt/bin/coxswain echo --listen 0.0.0.0:3000").unwrap();
        assert_eq!(rule.pattern, "*coxswain*");
        assert_eq!(rule.binary, PathBuf::from("/opt/bin/coxswain"));
        assert_eq!(
            rule.default_args,
            strings(&["echo", "--listen", "0.0.0.0:3000"])
        );
        assert!(ImageRule::parse("no-equals-sign").is_err());
        assert!(ImageRule::parse("*x*=").is_err());
        assert!(ImageRule::parse("=/bin/true").is_err());
    }

    #[test]
    fn parses_a_rules_file_with_comments() {
        let rules =
            ImageMap::parse_file("# map\n*echo-basic* = /bin/echo-basic\n\n*a*=/bin/a x # c\n")
                .unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].default_args, strings(&["x"]));
    }

    #[test]
    fn first_matching_rule_wins_and_unknown_images_have_no_launch() {
        let map = ImageMap::new(vec![
            ImageRule::parse("*echo-basic*=/bin/echo-basic").unwrap(),
            ImageRule::parse("*=/bin/fallback").unwrap(),
        ]);
        assert_eq!(
            map.rule_for("x/echo-basic:v1").unwrap().binary,
            PathBuf::from("/bin/echo-basic")
        );
        assert_eq!(
            map.rule_for("nginx").unwrap().binary,
            PathBuf::from("/bin/fallback")
        );
        let empty = ImageMap::default();
        assert!(empty.launch("nginx", &[], &[]).is_none());
    }

    #[test]
    fn command_head_is_dropped_and_args_follow() {
        let map = ImageMap::new(vec![
            ImageRule::parse("*coxswain*=/bin/coxswain echo").unwrap(),
        ]);
        let image = "ghcr.io/x/coxswain:dev";
        let with_command = map
            .launch(
                image,
                &strings(&["/coxswain", "echo"]),
                &strings(&["--name", "a"]),
            )
            .unwrap();
        assert_eq!(with_command.program, PathBuf::from("/bin/coxswain"));
        assert_eq!(with_command.args, strings(&["echo", "--name", "a"]));
        let args_only = map
            .launch(image, &[], &strings(&["run", "-c", "/cfg"]))
            .unwrap();
        assert_eq!(args_only.args, strings(&["run", "-c", "/cfg"]));
        let defaults = map.launch(image, &[], &[]).unwrap();
        assert_eq!(defaults.args, strings(&["echo"]));
    }
}
