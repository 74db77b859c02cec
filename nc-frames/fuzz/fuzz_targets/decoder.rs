//! The online decoder fed adversarial operation sequences.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    nc_frames::fuzzing::decoder(data);
});
