//! What the fakelet knows about a pod's containers, and the PodStatus it
//! reports from that.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

#[derive(Debug, Clone, PartialEq)]
pub enum RunState {
    Waiting {
        reason: String,
        message: Option<String>,
    },
    Running {
        started_at: Timestamp,
    },
    Terminated {
        exit_code: i32,
        signal: Option<i32>,
        reason: String,
        started_at: Timestamp,
        finished_at: Timestamp,
    },
}

impl RunState {
    pub fn waiting(reason: &str, message: Option<String>) -> Self {
        RunState::Waiting {
            reason: reason.to_string(),
            message,
        }
    }

    fn to_k8s(&self) -> ContainerState {
        match self {
            RunState::Waiting { reason, message } => ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason.clone()),
                    message: message.clone(),
                }),
                ..Default::default()
            },
            RunState::Running { started_at } => ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(Time(*started_at)),
                }),
                ..Default::default()
            },
            RunState::Terminated {
                exit_code,
                signal,
                reason,
                started_at,
                finished_at,
            } => ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: *exit_code,
                    signal: *signal,
                    reason: Some(reason.clone()),
                    started_at: Some(Time(*started_at)),
                    finished_at: Some(Time(*finished_at)),
                    ..Default::default()
                }),
                ..Default::default()
            },
        }
    }
}

#[derive(Debug, Clone)]
pub struct ContainerRuntime {
    pub name: String,
    pub image: String,
    pub state: RunState,
    pub last_terminated: Option<RunState>,
    pub restart_count: i32,
    pub ready: bool,
    /// Started at least once.
    pub ever_started: bool,
}

impl ContainerRuntime {
    pub fn new(name: &str, image: &str) -> Self {
        Self {
            name: name.to_string(),
            image: image.to_string(),
            state: RunState::waiting("ContainerCreating", None),
            last_terminated: None,
            restart_count: 0,
            ready: false,
            ever_started: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct PodRuntime {
    pub pod_ip: Option<Ipv4Addr>,
    pub host_ip: String,
    pub start_time: Timestamp,
    pub containers: Vec<ContainerRuntime>,
    /// Condition type -> (status, since): keeps lastTransitionTime honest.
    transitions: BTreeMap<&'static str, (bool, Timestamp)>,
}

impl PodRuntime {
    pub fn new(host_ip: &str, containers: Vec<ContainerRuntime>) -> Self {
        Self {
            pod_ip: None,
            host_ip: host_ip.to_string(),
            start_time: Timestamp::now(),
            containers,
            transitions: BTreeMap::new(),
        }
    }

    pub fn container_mut(&mut self, name: &str) -> Option<&mut ContainerRuntime> {
        self.containers.iter_mut().find(|c| c.name == name)
    }

    pub fn phase(&self) -> &'static str {
        let all_final = !self.containers.is_empty()
            && self
                .containers
                .iter()
                .all(|c| matches!(c.state, RunState::Terminated { .. }));
        if all_final {
            let ok = self
                .containers
                .iter()
                .all(|c| matches!(c.state, RunState::Terminated { exit_code: 0, .. }));
            return if ok { "Succeeded" } else { "Failed" };
        }
        if self.containers.iter().all(|c| c.ever_started) {
            "Running"
        } else {
            "Pending"
        }
    }

    fn condition(&mut self, kind: &'static str, status: bool, now: Timestamp) -> PodCondition {
        let entry = self.transitions.entry(kind).or_insert((status, now));
        if entry.0 != status {
            *entry = (status, now);
        }
        PodCondition {
            type_: kind.to_string(),
            status: if status { "True" } else { "False" }.to_string(),
            last_transition_time: Some(Time(entry.1)),
            ..Default::default()
        }
    }

    /// The status to report now.
    pub fn report(&mut self, now: Timestamp) -> PodStatus {
        let all_ready = self.containers.iter().all(|c| c.ready);
        let conditions = vec![
            self.condition("PodScheduled", true, now),
            self.condition("Initialized", true, now),
            self.condition("ContainersReady", all_ready, now),
            self.condition("Ready", all_ready, now),
        ];
        let statuses = self
            .containers
            .iter()
            .map(|c| ContainerStatus {
                name: c.name.clone(),
                image: c.image.clone(),
                image_id: String::new(),
                ready: c.ready,
                started: Some(matches!(c.state, RunState::Running { .. })),
                restart_count: c.restart_count,
                state: Some(c.state.to_k8s()),
                last_state: c.last_terminated.as_ref().map(RunState::to_k8s),
                ..Default::default()
            })
            .collect();
        let pod_ip = self.pod_ip.map(|ip| ip.to_string());
        PodStatus {
            phase: Some(self.phase().to_string()),
            conditions: Some(conditions),
            container_statuses: Some(statuses),
            host_ip: Some(self.host_ip.clone()),
            host_ips: Some(vec![HostIP {
                ip: self.host_ip.clone(),
            }]),
            pod_ip: pod_ip.clone(),
            pod_ips: pod_ip.map(|ip| vec![PodIP { ip }]),
            start_time: Some(Time(self.start_time)),
            // The API server computes qosClass at creation and refuses a
            // different value; a merge patch that omits it keeps its own.
            qos_class: None,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> PodRuntime {
        PodRuntime::new(
            "10.99.0.2",
            vec![
                ContainerRuntime::new("a", "img-a"),
                ContainerRuntime::new("b", "img-b"),
            ],
        )
    }

    fn cond<'a>(status: &'a PodStatus, kind: &str) -> &'a PodCondition {
        status
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == kind)
            .unwrap()
    }

    #[test]
    fn pending_until_every_container_started_then_ready_when_all_ready() {
        let mut pod = runtime();
        pod.pod_ip = Some(Ipv4Addr::new(10, 244, 0, 2));
        let t0 = Timestamp::now();
        let status = pod.report(t0);
        assert_eq!(status.phase.as_deref(), Some("Pending"));
        assert_eq!(status.pod_ip.as_deref(), Some("10.244.0.2"));
        assert_eq!(cond(&status, "Ready").status, "False");
        for c in &mut pod.containers {
            c.state = RunState::Running { started_at: t0 };
            c.ever_started = true;
        }
        pod.containers[0].ready = true;
        let status = pod.report(t0);
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(cond(&status, "ContainersReady").status, "False");
        pod.containers[1].ready = true;
        let later = t0 + jiff::SignedDuration::from_secs(5);
        let status = pod.report(later);
        assert_eq!(cond(&status, "Ready").status, "True");
        assert_eq!(
            cond(&status, "Ready").last_transition_time,
            Some(Time(later))
        );
        assert_eq!(
            cond(&status, "PodScheduled").last_transition_time,
            Some(Time(t0))
        );
        let statuses = status.container_statuses.unwrap();
        assert!(statuses.iter().all(|s| s.ready && s.started == Some(true)));
        assert!(statuses[0].state.as_ref().unwrap().running.is_some());
    }

    #[test]
    fn terminal_phases_follow_exit_codes() {
        let mut pod = runtime();
        let now = Timestamp::now();
        let done = |code| RunState::Terminated {
            exit_code: code,
            signal: None,
            reason: if code == 0 { "Completed" } else { "Error" }.into(),
            started_at: now,
            finished_at: now,
        };
        pod.containers[0].state = done(0);
        pod.containers[1].state = done(0);
        assert_eq!(pod.phase(), "Succeeded");
        pod.containers[1].state = done(2);
        assert_eq!(pod.phase(), "Failed");
    }

    #[test]
    fn waiting_reason_and_message_are_reported() {
        let mut pod = runtime();
        pod.containers[0].state =
            RunState::waiting("ErrImagePull", Some("image x is not mapped".into()));
        let status = pod.report(Timestamp::now());
        let waiting = status.container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .waiting
            .unwrap();
        assert_eq!(waiting.reason.as_deref(), Some("ErrImagePull"));
        assert_eq!(waiting.message.as_deref(), Some("image x is not mapped"));
    }
}
