//! A report's rows go to its files batch by batch (`report::batches`: a chunk of
//! users at a time for `compute_trends`), never held whole; the files are the same,
//! byte for byte, as when every table was built whole and written at once. The
//! digests below are those files, written from whole tables, over two generated
//! worlds (`small`, the demo's, and `large`, whose users come in ten chunks) each
//! synced on three days, as of each of the three days.

use crate::common;
use orgledger::mirror::runs::RunStatus;
use orgledger::render;
use orgledger::report::{Format, ReportOptions};
use orgledger::sandbox::Profile;
use orgledger::sync;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Syncs `profile`'s world on three days a day apart; returns the mirror's folder
/// and path.
async fn three_days(profile: Profile) -> (tempfile::TempDir, std::path::PathBuf) {
    let sb = common::sandbox(profile).await;
    let (dir, db) = common::scratch();
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    for day in 0..3 {
        if day > 0 {
            assert_eq!(
                common::admin_post(&sb, "/sandbox/advance?days=1").await,
                200
            );
        }
        let run = sync::run(&client, &opts, None).await.expect("a sync runs");
        assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.errors);
    }
    (dir, db)
}

/// `<as-of>/<file> <sha256>` of every CSV and JSON file of a run as of each of the
/// three days.
fn digests(db: &Path, out: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for day in 0..3 {
        let as_of = common::start_date() + chrono::Days::new(day);
        let mut opts = ReportOptions::new(db, as_of);
        // The six reports the digests were pinned for (written from whole tables).
        opts.names = SIX.iter().map(|n| n.to_string()).collect();
        opts.formats = vec![Format::Csv, Format::Json, Format::Parquet, Format::Xlsx];
        opts.out_root = out.to_path_buf();
        let outcome = render::run(&opts).expect("the reports build");
        for f in &outcome.files {
            let name = f.path.file_name().expect("a name").to_string_lossy();
            if name.ends_with(".csv") || name.ends_with(".json") {
                let bytes = std::fs::read(&f.path).expect("the file");
                assert_eq!(hex::encode(Sha256::digest(&bytes)), f.sha256, "{name}");
                lines.push(format!("{as_of}/{name} {}", f.sha256));
            }
        }
    }
    lines
}

/// The reports whose files the digests pin.
const SIX: [&str; 6] = [
    "entitlements",
    "trials",
    "project_compute",
    "compute_trends",
    "usage_summary",
    "changes",
];

fn check(profile: &str, got: &[String], pinned: &str) {
    if std::env::var_os("ORGLEDGER_PRINT_DIGESTS").is_some() {
        println!("{profile}:\n{}", got.join("\n"));
    }
    let want: Vec<&str> = pinned
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let differ: Vec<String> = want
        .iter()
        .zip(got)
        .filter(|(w, g)| *w != g)
        .map(|(w, g)| format!("want {w}\n got {g}"))
        .collect();
    assert_eq!(got.len(), want.len(), "{profile}: files");
    assert!(differ.is_empty(), "{profile}:\n{}", differ.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_reports_of_the_demo_world_are_byte_identical_to_whole_tables() {
    let (dir, db) = three_days(Profile::Small).await;
    let got = digests(&db, &dir.path().join("out"));
    check("small", &got, SMALL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_reports_of_a_large_world_are_byte_identical_to_whole_tables() {
    let (dir, db) = three_days(Profile::Large).await;
    let got = digests(&db, &dir.path().join("out"));
    check("large", &got, LARGE);
}

const SMALL: &str = "
2026-06-01/entitlements.csv 9decb4a42ca626b224f8c5931cc25038416ebe897f5c702fcdf056766d9129bc
2026-06-01/entitlements.json 63b096a4294cc3523442a99dc41ed0b1aed817c5f8ec842498c406899e32de9e
2026-06-01/trials.csv 6a21f9cace16d622563045dde028c4f07b6631c1f7c70846c7515189b5ab10d1
2026-06-01/trials.json 5788e9c4677f5be7c43131cfdd93e2ba14994852bc878d12cb549349114bbf69
2026-06-01/project_compute.csv eb6484ba76e66d433475935aaf3c2808bb5d2f9d8beec1eac917816e37e1b90a
2026-06-01/project_compute.json dc7cda03167f567c0d1806f9f3bd82a441d158a0f5f127650ed3bb0f7b1bb0d9
2026-06-01/compute_trends.csv 650acc1da2d69b4ce3de98c35c2c30b4a9a4fc48f19f869dbfd32a9d929498dd
2026-06-01/compute_trends.json c275dac5bd558ab5ed11ce5df7b5a11b4e87c49f7fd55fd4c6d643139d78656a
2026-06-01/usage_summary.csv 15088ed12dd661e782d53fcc9a99fa44c9dd3993ee81964450ae310a19115e10
2026-06-01/usage_summary.json 664856879993dcf6391cdcea78deafe6b8b08d4d51ea0eb9fb58312a512a676d
2026-06-01/changes.csv ee037142f93a34adafa2a9429c152a949d2e28ddc12d53c15e71b172f3deeedf
2026-06-01/changes.json 37517e5f3dc66819f61f5a7bb8ace1921282415f10551d2defa5c3eb0985b570
2026-06-02/entitlements.csv db322a82256e33b94c3d3844645dfc7ee4b8e8cf10d8a5b243594e1d2b65b033
2026-06-02/entitlements.json dd42bb7bb4a8a982f43815e3af579bb6556504371850f2529570128fb53f2938
2026-06-02/trials.csv 580c33944c0e25b5c99a1a65de12a9b2090209ce9fc798f2d2310a99ec958b18
2026-06-02/trials.json 5d18c10b6e91a18205dfbf49cfd3723bf2ff639c047317bc5b445f6899dce597
2026-06-02/project_compute.csv 4db82e06dc348a5ad31f3ba612006b7887311a9ee00e6696e2ad271271c68128
2026-06-02/project_compute.json 8b58c9a9d9f41102ae9ad5c45112a9761ec88bfd2f306bd69a4645f87260e63e
2026-06-02/compute_trends.csv d20a67fa0775b77bc901cfc185b4d56176978a5251497a4c95aa49d692050cdc
2026-06-02/compute_trends.json 06870b15cb4d224c09992d29969505c2fe1652d8e3f5539a1720cf3ccac527db
2026-06-02/usage_summary.csv a8724d26285eecd67fd4b828591de034b39b19adca8db5493b279845861235f8
2026-06-02/usage_summary.json 4e80b6465c6a4daf9993818429604324d5a2003b99accc788f2eaffa38362b99
2026-06-02/changes.csv 796ba5390486a58fe5aba0ae466a04fd1cc041ba465eb109dcf8baed458daac6
2026-06-02/changes.json a70c53d34f4efeb205c288d1c117c34d6d5fc98fef272c29bd490ff0a61034ef
2026-06-03/entitlements.csv 671b13f1cc2683eefbb4f4e2d38a26270e62cee6d06a65d44f71aee7b6b88d61
2026-06-03/entitlements.json 9ee9f43c7aa4bb5458e313ab93581510be1ec6fa0aed4ad0c7d2db523c4271a6
2026-06-03/trials.csv cdea13048f75f5ed59233fe4c05db88d32c1119a0f2b3f40b7d1fd48ccfb6bf2
2026-06-03/trials.json fbc01eefeca4b7ce7e843feb0144e366e94affd19b613bebe58e8ee169783014
2026-06-03/project_compute.csv 31be111aef72cc3e3ad0111a33a07932313664db9f15687c77a6000729e53c04
2026-06-03/project_compute.json 3c4a49bce27f138f62914415c78600351ea5870232c7e32eb5ab6dc4e9d35543
2026-06-03/compute_trends.csv 2ef04575050c93118b50a6c36dfc804ebdbc2602cd51b247ef06a460d37a925b
2026-06-03/compute_trends.json f6b0870e7c7423a50d306e2f5d768c608f281f3c46c0a73b3da41df50a458c02
2026-06-03/usage_summary.csv 993bd4cc75fe9d51c31811bcc09e20ad4b47dd5e00a5f4a0186c131dff6af618
2026-06-03/usage_summary.json e594cd4777a6ffd3474d4ec2d8068b014afe0c78ef88e70813546522db425da6
2026-06-03/changes.csv 796ba5390486a58fe5aba0ae466a04fd1cc041ba465eb109dcf8baed458daac6
2026-06-03/changes.json a70c53d34f4efeb205c288d1c117c34d6d5fc98fef272c29bd490ff0a61034ef
";

const LARGE: &str = "
2026-06-01/entitlements.csv 2e12842887247f28c93d441250c5fad8d679e7b29344c56967675beb81cb67d8
2026-06-01/entitlements.json 3b4c66335a0b9328e8d81765c7170b70817e87c96b34ddbcf80292337d651242
2026-06-01/trials.csv 3fe3b16b7de0aa5d8f76fba219a83f534873e629092f44ccad69e35889d0ab8a
2026-06-01/trials.json 860cd748befa468d2a5db8bf0f76f79a2add814a317e168ef5840228a9d58e6f
2026-06-01/project_compute.csv 1dfcb8d957cce6459c89e659789d03d3f64a85faa25372ef9f6f5179880c0f4e
2026-06-01/project_compute.json 3733d18f2d3ca7a0c36fdd8648398750f64beb83d450c6ffd6cd4bfabddca9d2
2026-06-01/compute_trends.csv ff64b925539cb70c488329d4fba69f842f99cc43bc9b96e3de68686d645f0ee2
2026-06-01/compute_trends.json 9822450a00f4b6fa5ca18a7f58919805839393dcebc915bccfb7b88134ee21c7
2026-06-01/usage_summary.csv 783eb8840cdb019c04ac622b396eb2bf1fe3ff11b5a267fd9450d88d503ce7f2
2026-06-01/usage_summary.json ef68483e155c1875065c95a5363ff352e7afa1ec66da51911ba238c6629882a4
2026-06-01/changes.csv ee037142f93a34adafa2a9429c152a949d2e28ddc12d53c15e71b172f3deeedf
2026-06-01/changes.json 37517e5f3dc66819f61f5a7bb8ace1921282415f10551d2defa5c3eb0985b570
2026-06-02/entitlements.csv 19d13707fdb178e69743349faf8d4de712cf7a88383376ab9bfd93948ff1f45a
2026-06-02/entitlements.json 5d33856a84cacb594a07cb5895f7a5c58292c08402e1d2599a1f3e99a4a5e745
2026-06-02/trials.csv 82ef394641e1e4aebbaf409533b748848d96d3eaa349d3416b8d48a1c6c25caf
2026-06-02/trials.json b34b5db43b29c4835e44aa04e48ebba4402552c95794bf204418c9dfdb7a9960
2026-06-02/project_compute.csv a0e6a09daf16b810cce4dbabf2d5b35a0d79688d394869be3278c194a7344fd6
2026-06-02/project_compute.json 7b0876d36fb17275960e44126a0b7bc3df1081ead7ced34eacd71be19e8b7151
2026-06-02/compute_trends.csv dadbada9d40be5ce0048869e9e9c957342564cf3c355a74ed2b5681a39eeb206
2026-06-02/compute_trends.json 320bbfef1b9d8ae0a1ec1182cfce75e6eb16aa227b30c2b1b868ef71c55a4ef7
2026-06-02/usage_summary.csv 1732912c60c88a1ad2fdebf6bb6c7b1173d1a58561804278f82c6dc2a42be5d8
2026-06-02/usage_summary.json ca63bd1e274d2c8724dab0a9db23b251581b0ca6bc72fc52e48de85a39f53cc1
2026-06-02/changes.csv d187759029b919435399efba47449c16f6073f60ca296fcb113252bb4c18c235
2026-06-02/changes.json d8310a23e33c936b58c0feaaaa123c8e355fc05fdf6d83194c2f4db92a21c92a
2026-06-03/entitlements.csv fb4037298164a5bbdff3726fca80f3f241aa31db8d565094406b2870739587fc
2026-06-03/entitlements.json ac148a79abac623e17c78ccc236d28d78e1d260a4827263281dd80005a27aff1
2026-06-03/trials.csv 4ef5a726c10b6ffb694c88f3bf3ec65679f855ec848275a534cc9a6fc19128af
2026-06-03/trials.json 9ffece5fac1c459ec49025e7416b9fde1dc15b749c28c0b2f5c77692c886b8ae
2026-06-03/project_compute.csv 6787734d0639ed8ac499e41608c5b5abf2df0f7e045e8d25d3af52024066978e
2026-06-03/project_compute.json 1d99a5cb5072109f3994d51c717c28ce1d3bc8f838cf299cf7cf2a09adf6c288
2026-06-03/compute_trends.csv 911b80d5fbaa8e947038c72cda74f54c05e0e9fc32be78a5d240c8f40edc5f85
2026-06-03/compute_trends.json 9cb1b554506aa92fe1f6f96f4919ffb095e6b21415e4332ee6138cfdb13094d0
2026-06-03/usage_summary.csv 5827226a7ed860b4a9609bab52651ef31e4a3f046216ab3c3b8a13a30d87a60c
2026-06-03/usage_summary.json fc0a41f57f4f4e98d43cdd15b494e42854b6883548378dddea9dbcd2a008e06c
2026-06-03/changes.csv d2f01a1a5febd8f70f461e56d3af30cf4033c3c06b3d303d5f39ac269bb15743
2026-06-03/changes.json 8315ec74345c724d9a21043bcf3e186afc906da349807fc8ac0d6f14fdd00ec1
";
