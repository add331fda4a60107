//! The project information document (`get-project-info`): the project, its settings
//! and summaries, devices and sensors, latency devices, experiments and notification
//! lists.
//!
//! Mapped on the fetching task that received it, like every document: there is one
//! per project, and building the widest row of the mirror in parallel keeps the
//! single SQLite writer to comparing hashes and executing statements.

use super::{Cell, DocRows, experiment_rows, project_rows};
use crate::api::models::{DataSummary, DataSummaryPerCategory, LatencyDevice, ProjectInfoResponse};
use crate::api::secret::Secret;
use crate::mirror::spec;
use rusqlite::types::Value;

/// Full project information and its child lists. Development keys are stored only
/// as fingerprints unless `store_secrets` is set.
pub fn project_info(project_id: i64, doc: &ProjectInfoResponse, store_secrets: bool) -> DocRows {
    let mut out = DocRows::default();
    let context = format!("project {project_id}");
    // Without its `project` object the document is not this project's information:
    // storing it would blank the project's row and mark its devices removed.
    let Some(p) = &doc.project else {
        out.problems
            .push(format!("{context}: the response has no `project` object").into());
        return out;
    };
    project_rows(&mut out, p, &context);
    out.root(
        &spec::PROJECT_INFO,
        project_info_row(project_id, doc, store_secrets),
    );
    device_rows(&mut out, project_id, doc);
    let latency = doc
        .latency_devices
        .iter()
        .filter_map(|l| latency_row(project_id, l))
        .collect();
    out.scope(&spec::LATENCY_DEVICES, vec![project_id.cell()], latency);
    experiment_rows(&mut out, "project", project_id, &doc.experiments);
    out.scope(
        &spec::PROJECT_NOTIFICATION_USERS,
        vec![project_id.cell()],
        notification_rows(project_id, doc),
    );
    out
}

/// The `project_info` row, its nested objects flattened in the table's column order.
fn project_info_row(project_id: i64, doc: &ProjectInfoResponse, store_secrets: bool) -> Vec<Value> {
    let mut row = Vec::with_capacity(spec::PROJECT_INFO.width());
    row.push(project_id.cell());
    row.extend(development_key_cells(doc, store_secrets));
    row.extend(impulse_and_data_summary_cells(doc));
    row.extend(settings_cells(doc));
    row.extend(wizard_and_performance_cells(doc));
    row.extend(page_cells(doc));
    row
}

fn secret_cells(key: Option<&Secret>, store_secrets: bool) -> [Value; 2] {
    match key.filter(|k| !k.is_empty()) {
        None => [Value::Null, Value::Null],
        Some(k) if store_secrets => [
            Value::Text(k.expose().to_string()),
            Value::Text(k.fingerprint()),
        ],
        Some(k) => [Value::Null, Value::Text(k.fingerprint())],
    }
}

/// The API and HMAC keys, then their fingerprints.
fn development_key_cells(doc: &ProjectInfoResponse, store_secrets: bool) -> [Value; 4] {
    let keys = doc.development_keys.as_ref();
    let [api_key, api_fp] = secret_cells(keys.and_then(|k| k.api_key.as_ref()), store_secrets);
    let [hmac_key, hmac_fp] = secret_cells(keys.and_then(|k| k.hmac_key.as_ref()), store_secrets);
    [api_key, hmac_key, api_fp, hmac_fp]
}

/// The impulse's state, then the data summary overall and per category.
fn impulse_and_data_summary_cells(doc: &ProjectInfoResponse) -> Vec<Value> {
    let imp = doc.impulse.as_ref();
    let per = doc.data_summary_per_category.as_ref();
    let cat = |f: fn(&DataSummaryPerCategory) -> Option<&DataSummary>| per.and_then(f);
    let mut cells = vec![
        imp.and_then(|i| i.created).cell(),
        imp.and_then(|i| i.configured).cell(),
        imp.and_then(|i| i.complete).cell(),
    ];
    for s in [
        doc.data_summary.as_ref(),
        cat(|p| p.training.as_ref()),
        cat(|p| p.testing.as_ref()),
        cat(|p| p.post_processing.as_ref()),
    ] {
        cells.extend([
            s.and_then(|s| s.total_length_ms).cell(),
            s.and_then(|s| s.data_count).cell(),
            s.map(|s| s.labels.cell()).unwrap_or(Value::Null),
        ]);
    }
    cells
}

/// Compute time, acquisition and deploy settings, and the mobile client URLs.
fn settings_cells(doc: &ProjectInfoResponse) -> Vec<Value> {
    let ct = doc.compute_time.as_ref();
    let acq = doc.acquisition_settings.as_ref();
    let dep = doc.deploy_settings.as_ref();
    let urls = doc.urls.as_ref();
    vec![
        ct.and_then(|c| c.period_start_date).cell(),
        ct.and_then(|c| c.period_end_date).cell(),
        ct.and_then(|c| c.time_used_ms).cell(),
        ct.and_then(|c| c.time_left_ms).cell(),
        acq.and_then(|a| a.interval_ms).cell(),
        acq.and_then(|a| a.length_ms).cell(),
        acq.and_then(|a| a.segment_shift).cell(),
        acq.and_then(|a| a.default_page_size).cell(),
        acq.and_then(|a| a.view_type.clone()).cell(),
        acq.and_then(|a| a.grid_column_count).cell(),
        acq.and_then(|a| a.grid_column_count_detailed).cell(),
        acq.and_then(|a| a.show_exact_sample_length).cell(),
        acq.and_then(|a| a.inline_edit_bounding_boxes).cell(),
        acq.and_then(|a| a.sensor.clone()).cell(),
        acq.and_then(|a| a.label.clone()).cell(),
        acq.and_then(|a| a.segment_length).cell(),
        dep.and_then(|d| d.eon_compiler).cell(),
        dep.and_then(|d| d.sensor.clone()).cell(),
        dep.and_then(|d| d.arduino_library_name.clone()).cell(),
        dep.and_then(|d| d.tinkerkit_library_name.clone()).cell(),
        dep.and_then(|d| d.particle_library_name.clone()).cell(),
        dep.and_then(|d| d.last_deploy_model_engine.clone()).cell(),
        urls.and_then(|u| u.mobile_client.clone()).cell(),
        urls.and_then(|u| u.mobile_client_computer.clone()).cell(),
        urls.and_then(|u| u.mobile_client_inference.clone()).cell(),
    ]
}

/// The getting-started wizard and the performance limits.
fn wizard_and_performance_cells(doc: &ProjectInfoResponse) -> [Value; 10] {
    let wiz = doc.show_getting_started_wizard.as_ref();
    let perf = doc.performance.as_ref();
    [
        doc.show_create_first_impulse.cell(),
        wiz.and_then(|w| w.show_wizard).cell(),
        wiz.and_then(|w| w.step).cell(),
        wiz.and_then(|w| w.tutorial.clone()).cell(),
        wiz.map(|w| w.classes.cell()).unwrap_or(Value::Null),
        perf.and_then(|p| p.gpu).cell(),
        perf.and_then(|p| p.job_limit_m).cell(),
        perf.and_then(|p| p.dsp_file_size_mb).cell(),
        perf.and_then(|p| p.enterprise_performance).cell(),
        perf.and_then(|p| p.train_job_ram_mb).cell(),
    ]
}

/// The rest of the page's state: flags, readme, import and DSP settings, target
/// constraints, the default impulse and the model engine last shown.
fn page_cells(doc: &ProjectInfoResponse) -> [Value; 14] {
    let tc = doc.target_constraints.as_ref();
    [
        doc.has_new_training_data.cell(),
        doc.studio_url.cell(),
        doc.in_pretrained_model_flow.cell(),
        doc.show_sensor_data_in_acquisition_graph.cell(),
        doc.notifications.cell(),
        doc.readme.as_ref().and_then(|r| r.markdown.clone()).cell(),
        doc.readme.as_ref().and_then(|r| r.html.clone()).cell(),
        doc.csv_import_config.cell(),
        doc.dsp_page_size.cell(),
        tc.and_then(|t| serde_json::to_string(t).ok())
            .map_or(Value::Null, Value::Text),
        tc.and_then(|t| t.selected_target_based_on.clone()).cell(),
        doc.default_impulse_id.cell(),
        doc.last_shown_model_engine
            .as_ref()
            .map(|e| e.as_str().to_string())
            .cell(),
        doc.versioning_storage_size_mib.cell(),
    ]
}

/// A `latency_devices` row; None for a target without an MCU name.
fn latency_row(project_id: i64, l: &LatencyDevice) -> Option<Vec<Value>> {
    Some(vec![
        project_id.cell(),
        l.mcu.clone()?.as_str().cell(),
        l.name.cell(),
        l.selected.cell(),
        l.int8_latency.cell(),
        l.int8_conv_latency.cell(),
        l.float32_latency.cell(),
        l.float32_conv_latency.cell(),
        l.help_text.cell(),
    ])
}

/// One row per (job kind, user) notified when a job of that kind finishes.
fn notification_rows(project_id: i64, doc: &ProjectInfoResponse) -> Vec<Vec<Value>> {
    let lists = [
        ("train", &doc.train_job_notification_uids),
        ("dsp", &doc.dsp_job_notification_uids),
        ("model_testing", &doc.model_testing_job_notification_uids),
        ("export", &doc.export_job_notification_uids),
    ];
    lists
        .iter()
        .flat_map(|(job, uids)| uids.iter().map(move |uid| (*job, *uid)))
        .map(|(job, uid)| vec![project_id.cell(), job.cell(), uid.cell()])
        .collect()
}

fn device_rows(out: &mut DocRows, project_id: i64, doc: &ProjectInfoResponse) {
    let mut devices = Vec::with_capacity(doc.devices.len());
    let mut sensors = Vec::new();
    for d in &doc.devices {
        let Some(device_id) = d.device_id.as_deref() else {
            out.skipped(
                &format!("project {project_id}"),
                "a device without a deviceId",
            );
            continue;
        };
        let inf = d.inference_info.as_ref();
        devices.push(vec![
            project_id.cell(),
            device_id.cell(),
            d.id.cell(),
            d.created.cell(),
            d.last_seen.cell(),
            d.name.cell(),
            d.device_type.cell(),
            d.remote_mgmt_connected.cell(),
            d.supports_snapshot_streaming.cell(),
            d.remote_mgmt_mode.cell(),
            d.remote_mgmt_host.cell(),
            inf.and_then(|i| i.project_id).cell(),
            inf.and_then(|i| i.project_owner.clone()).cell(),
            inf.and_then(|i| i.project_name.clone()).cell(),
            inf.and_then(|i| i.deployed_version).cell(),
            inf.and_then(|i| i.model_type.clone()).cell(),
        ]);
        for s in &d.sensors {
            if let Some(name) = s.name.as_deref() {
                sensors.push(vec![
                    project_id.cell(),
                    device_id.cell(),
                    name.cell(),
                    s.max_sample_length_s.cell(),
                    s.frequencies.cell(),
                ]);
            }
        }
    }
    out.scope(&spec::DEVICES, vec![project_id.cell()], devices);
    out.scope(&spec::DEVICE_SENSORS, vec![project_id.cell()], sensors);
}

#[cfg(test)]
mod tests {
    use super::super::RowSet;
    use super::super::tests::project;
    use super::*;
    use crate::api::models::*;

    #[test]
    fn development_keys_become_fingerprints_unless_opted_in() {
        let key = Secret::new("ei_0123456789");
        let info = ProjectInfoResponse {
            project: Some(project()),
            development_keys: Some(DevelopmentKeys {
                api_key: Some(key.clone()),
                hmac_key: None,
            }),
            ..Default::default()
        };
        let row = |store| {
            project_info(1, &info, store)
                .sets
                .into_iter()
                .find_map(|set| match set {
                    RowSet::Root { table, row } if table.name == "project_info" => Some(row.values),
                    _ => None,
                })
                .expect("a project_info row")
        };
        let hidden = row(false);
        assert_eq!(hidden[1], Value::Null);
        assert_eq!(hidden[3], Value::Text(key.fingerprint()));
        assert_eq!(row(true)[1], Value::Text("ei_0123456789".into()));
    }
}
