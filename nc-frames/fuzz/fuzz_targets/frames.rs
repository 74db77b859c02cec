//! Every frame parser and the transport parameter decoder.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nc_frames::fuzzing::frames(data));
