//! Generates the SDK's foreign bindings.
//!
//! `qnc-sdk-bindgen c-header OUT.h` writes the C header (cbindgen);
//! anything else is UniFFI's own command line, e.g.
//! `qnc-sdk-bindgen generate --library target/debug/libqnc_sdk.so
//! --language python --out-dir OUT`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("c-header") {
        let Some(out) = args.get(2) else {
            eprintln!("usage: qnc-sdk-bindgen c-header OUT.h");
            std::process::exit(2);
        };
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let config = match cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: cbindgen.toml: {e}");
                std::process::exit(1);
            }
        };
        match cbindgen::Builder::new()
            .with_config(config)
            .with_src(format!("{dir}/src/capi.rs"))
            .generate()
        {
            Ok(b) => {
                b.write_to_file(out);
            }
            Err(e) => {
                eprintln!("error: cbindgen: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    uniffi::uniffi_bindgen_main()
}
