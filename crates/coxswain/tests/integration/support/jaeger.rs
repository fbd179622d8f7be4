//! A real OTLP receiver for the tracing tests: Jaeger (tools/jaeger,
//! built once and cached) with in-memory storage, its OTLP gRPC and HTTP
//! receivers and its query API on reserved loopback ports, killed on drop.

use std::process::{Child, Command, Stdio};

use super::{TempDir, build_tool, curl_get, free_port, wait_for};

pub struct Jaeger {
    child: Child,
    /// OTLP/gRPC and OTLP/HTTP receiver ports.
    pub grpc: u16,
    pub http: u16,
    query: u16,
    /// Holds the config and log; removed on drop.
    _dir: TempDir,
}

impl Jaeger {
    pub fn start() -> Self {
        let binary = build_tool("jaeger/build.sh").remove(0);
        let dir = TempDir::new("jaeger");
        let (grpc, http, query, query_grpc) = (free_port(), free_port(), free_port(), free_port());
        let config = dir.write(
            "config.yaml",
            &format!(
                "service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{grpc}
      http:
        endpoint: 127.0.0.1:{http}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"
            ),
        );
        let log = std::fs::File::create(dir.path().join("jaeger.log")).unwrap();
        let child = Command::new(binary)
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let jaeger = Jaeger {
            child,
            grpc,
            http,
            query,
            _dir: dir,
        };
        wait_for("Jaeger's query API and OTLP receivers", || {
            let listening = |port| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            jaeger.get("/api/services").0 == 200 && listening(grpc) && listening(http)
        });
        jaeger
    }

    /// `--otlp-endpoint` for the gRPC receiver, or the HTTP one.
    pub fn endpoint(&self, protocol: &str) -> String {
        match protocol {
            "grpc" => format!("http://127.0.0.1:{}", self.grpc),
            _ => format!("http://127.0.0.1:{}", self.http),
        }
    }

    fn get(&self, path: &str) -> (u16, String) {
        curl_get(&[], &format!("http://127.0.0.1:{}{path}", self.query))
    }

    /// The stored trace with this id (32 hex digits), if any.
    pub fn trace(&self, trace_id: &str) -> Option<Trace> {
        let (code, body) = self.get(&format!("/api/traces/{trace_id}"));
        if code != 200 {
            return None;
        }
        let json: serde_json::Value = serde_json::from_str(&body).ok()?;
        let trace = json["data"].as_array()?.first()?.clone();
        Some(Trace(trace))
    }

    /// Waits (with the deadline) until the trace has at least `spans` spans.
    pub fn wait_trace(&self, trace_id: &str, spans: usize) -> Trace {
        let mut found = None;
        wait_for(
            &format!("{spans} spans of trace {trace_id} in Jaeger"),
            || {
                found = self.trace(trace_id).filter(|t| t.spans().len() >= spans);
                found.is_some()
            },
        );
        found.unwrap()
    }
}

impl Drop for Jaeger {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One trace as Jaeger's query API returns it.
pub struct Trace(pub serde_json::Value);

impl Trace {
    pub fn spans(&self) -> Vec<Span> {
        self.0["spans"]
            .as_array()
            .map(|spans| spans.iter().cloned().map(Span).collect())
            .unwrap_or_default()
    }

    /// The spans of one kind (`server`, `client`).
    pub fn of_kind(&self, kind: &str) -> Vec<Span> {
        let mut spans: Vec<Span> = self
            .spans()
            .into_iter()
            .filter(|s| s.tag("span.kind").as_ref().and_then(|v| v.as_str()) == Some(kind))
            .collect();
        spans.sort_by_key(|s| s.0["startTime"].as_u64());
        spans
    }

    /// The service name of the process that sent `span`.
    pub fn service_of(&self, span: &Span) -> String {
        let process = span.0["processID"].as_str().unwrap_or_default();
        self.0["processes"][process]["serviceName"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

pub struct Span(pub serde_json::Value);

impl Span {
    pub fn id(&self) -> String {
        self.0["spanID"].as_str().unwrap_or_default().to_string()
    }

    pub fn name(&self) -> String {
        self.0["operationName"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The span id of its CHILD_OF reference.
    pub fn parent(&self) -> Option<String> {
        self.0["references"]
            .as_array()?
            .iter()
            .find(|r| r["refType"] == "CHILD_OF")
            .and_then(|r| r["spanID"].as_str())
            .map(str::to_string)
    }

    pub fn tag(&self, key: &str) -> Option<serde_json::Value> {
        self.0["tags"]
            .as_array()?
            .iter()
            .find(|t| t["key"] == key)
            .map(|t| t["value"].clone())
    }

    /// A string tag's value.
    pub fn text(&self, key: &str) -> Option<String> {
        self.tag(key)?.as_str().map(str::to_string)
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        self.tag(key)?.as_i64()
    }
}

/// Jaeger prints trace ids without leading zeros; ids compare padded.
pub fn same_trace_id(a: &str, b: &str) -> bool {
    format!("{a:0>32}").eq_ignore_ascii_case(&format!("{b:0>32}"))
}
