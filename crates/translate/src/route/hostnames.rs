//! Route hostnames and their intersection with a listener's hostname.

use coxswain_ir::Hostname;

pub fn parse_route_hostnames(hostnames: Option<&[String]>) -> Result<Vec<Hostname>, String> {
    let mut out: Vec<Hostname> = Vec::new();
    for h in hostnames.unwrap_or_default() {
        let parsed = Hostname::parse(h).map_err(|e| e.to_string())?;
        if !out.contains(&parsed) {
            out.push(parsed);
        }
    }
    Ok(out)
}

/// The hostnames a route serves on a listener. `None`: no intersection, the
/// route cannot attach. `Some(empty)`: every Host the listener accepts.
pub fn effective_hostnames(
    listener: Option<&Hostname>,
    route: &[Hostname],
) -> Option<Vec<Hostname>> {
    let Some(listener) = listener else {
        return Some(route.to_vec());
    };
    if route.is_empty() {
        return Some(Vec::new());
    }
    let mut out: Vec<Hostname> = Vec::new();
    for h in route {
        if let Some(i) = Hostname::intersect(listener, h)
            && !out.contains(&i)
        {
            out.push(i);
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Hostname {
        Hostname::parse(s).unwrap()
    }

    #[test]
    fn listener_without_hostname_keeps_route_hostnames() {
        assert_eq!(
            effective_hostnames(None, &[h("a.com")]),
            Some(vec![h("a.com")])
        );
        assert_eq!(effective_hostnames(None, &[]), Some(vec![]));
    }

    #[test]
    fn intersection_narrows_or_rejects() {
        let l = h("*.example.com");
        assert_eq!(effective_hostnames(Some(&l), &[]), Some(vec![]));
        assert_eq!(
            effective_hostnames(Some(&l), &[h("a.example.com"), h("other.net")]),
            Some(vec![h("a.example.com")])
        );
        assert_eq!(effective_hostnames(Some(&l), &[h("other.net")]), None);
    }
}
