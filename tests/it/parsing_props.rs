//! Property tests on model parsing: whatever JSON arrives, parsing returns a value
//! or an error, never panics; and the tolerant rules hold for any number.

use orgledger::api::models::{
    OrganizationListResponse, OrganizationResponse, ProjectInfoResponse, ProjectListResponse,
    WhitelabelUserResponse,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-zA-Z0-9 é東:.-]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("success".to_string()),
                    Just("id".to_string()),
                    Just("organization".to_string()),
                    Just("users".to_string()),
                    Just("projects".to_string()),
                    Just("user".to_string()),
                    Just("dailyMetrics".to_string()),
                    Just("date".to_string()),
                    Just("computeTime".to_string()),
                    "[a-z]{1,8}",
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn parse_all(bytes: &[u8]) {
    let _ = serde_json::from_slice::<OrganizationResponse>(bytes);
    let _ = serde_json::from_slice::<OrganizationListResponse>(bytes);
    let _ = serde_json::from_slice::<WhitelabelUserResponse>(bytes);
    let _ = serde_json::from_slice::<ProjectListResponse>(bytes);
    let _ = serde_json::from_slice::<ProjectInfoResponse>(bytes);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_json_never_panics(value in arb_json()) {
        parse_all(&serde_json::to_vec(&value).expect("serialize"));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        parse_all(&bytes);
    }

    #[test]
    fn integral_floats_are_ids_and_fractions_are_errors(n in -1_000_000i64..1_000_000, frac in 1u32..99) {
        let whole = format!(r#"{{"success":true,"projects":[{{"id":{n}.0}}]}}"#);
        let parsed: ProjectListResponse = serde_json::from_str(&whole).expect("n.0 is an integer");
        prop_assert_eq!(parsed.projects[0].id, Some(n));
        let fractional = format!(r#"{{"success":true,"projects":[{{"id":{n}.{frac:02}}}]}}"#);
        prop_assert!(serde_json::from_str::<ProjectListResponse>(&fractional).is_err());
    }

    #[test]
    fn any_success_flag_is_read(flag in any::<bool>(), extra in "[a-z]{1,10}") {
        let body = json!({ "success": flag, "error": "e", extra: 1 });
        let parsed: OrganizationListResponse = serde_json::from_value(body).expect("parses");
        prop_assert_eq!(parsed.success, flag);
    }
}
