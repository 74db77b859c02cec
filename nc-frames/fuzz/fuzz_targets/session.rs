//! Sender + receiver over a channel whose drops and delays come from the input.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    nc_frames::fuzzing::session(data);
});
