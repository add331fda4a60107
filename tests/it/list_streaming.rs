//! List documents are read as streams: their elements reach the sync while the
//! body is still arriving, so memory does not grow with the longest list.

use orgledger::api::models::Project;
use orgledger::api::secret::Secret;
use orgledger::api::{Client, ClientConfig, Credentials, Operation, Sink};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server that sends the first half of a project list, then holds the rest back
/// until the client has handed on the projects of that half (or 10 s pass).
/// Returns whether the client's batch came first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_list_is_handed_on_before_its_body_ends() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (handed_tx, mut handed_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let first: String = (1..=300)
        .map(|id| format!(r#"{{"id":{id},"name":"project {id}"}},"#))
        .collect();
    let head = format!(r#"{{"success":true,"projects":[{first}"#);
    let tail = r#"{"id":301,"name":"last"}]}"#.to_string();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut request = vec![0u8; 4096];
        let _ = socket.read(&mut request).await.expect("request");
        let length = head.len() + tail.len();
        let headers = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
        );
        socket
            .write_all(format!("{headers}{head}").as_bytes())
            .await
            .expect("first half");
        socket.flush().await.expect("flush");
        let early = tokio::time::timeout(Duration::from_secs(10), handed_rx.recv())
            .await
            .ok()
            .flatten();
        socket
            .write_all(tail.as_bytes())
            .await
            .expect("second half");
        socket.flush().await.expect("flush");
        early
    });
    let credentials = Credentials {
        api_key: Some(Secret::new("ei_test".to_string())),
        jwt: None,
    };
    let client = Client::new(ClientConfig::new(url, credentials)).expect("client");
    let (ids_tx, ids_rx) = std::sync::mpsc::channel::<i64>();
    let sink = move |batch: Vec<Project>| {
        let _ = handed_tx.send(batch.len());
        for project in batch {
            let _ = ids_tx.send(project.id.unwrap_or_default());
        }
    };
    let streamed = client
        .stream_list::<Project, _, ()>(
            Operation::ListProjects,
            "/v1/api/projects",
            "projects",
            100,
            Sink {
                sink,
                may_block: true,
            },
        )
        .await
        .expect("the list is read");
    let early = server.await.expect("server");
    assert_eq!(
        early,
        Some(100),
        "a batch of the first half was handed on before the second half was sent"
    );
    assert_eq!(streamed.elements, 301);
    assert_eq!(
        ids_rx.try_iter().collect::<Vec<_>>(),
        (1..=301).collect::<Vec<_>>()
    );
}
