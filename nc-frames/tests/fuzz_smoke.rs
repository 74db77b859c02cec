//! Stable-toolchain smoke run of the fuzz entry points on deterministic
//! random and structured inputs (the real fuzzing is `cargo +nightly fuzz`).

use nc_frames::frames::{put_varint, FRAME_NC_ACK, FRAME_REPAIR};
use nc_frames::fuzzing;
use nc_frames::testrng::Rng;

#[test]
fn frames_random_inputs() {
    let mut rng = Rng::new(11);
    for _ in 0..20_000 {
        let mut v = vec![0u8; rng.below(64) as usize];
        rng.fill(&mut v);
        // Bias towards our frame types.
        if rng.below(2) == 0 {
            let mut h = Vec::new();
            put_varint(
                &mut h,
                if rng.below(2) == 0 {
                    FRAME_REPAIR
                } else {
                    FRAME_NC_ACK
                },
            );
            h.extend_from_slice(&v);
            v = h;
        }
        fuzzing::frames(&v);
    }
}

#[test]
fn decoder_random_sequences() {
    let mut rng = Rng::new(12);
    let mut innovative = 0;
    for _ in 0..3_000 {
        // Structured inputs: mostly in-window offsets and short payloads,
        // with occasional out-of-range values.
        let mut v = vec![rng.byte() % 16];
        let w = 1 + (v[0] as u64 % 32);
        for _ in 0..rng.below(60) {
            let op = rng.byte();
            v.push(op);
            let off = if rng.below(10) == 0 {
                rng.byte()
            } else {
                (rng.below(w + 6)) as u8
            };
            match op % 4 {
                0 => {
                    v.push(off.wrapping_add(4));
                    let len = rng.below(8) as u8;
                    v.push(len);
                    v.extend((0..len).map(|_| rng.byte()));
                }
                1 | 2 => {
                    v.push(off.wrapping_add(8));
                    let cnt = 1 + rng.below(w) as u8;
                    v.push(cnt);
                    let len = rng.below(10) as u8;
                    v.push(len);
                    if op % 4 == 1 {
                        v.push(rng.byte());
                        v.push(rng.byte());
                    } else {
                        v.extend((0..cnt).map(|_| if rng.below(3) == 0 { 0 } else { rng.byte() }));
                    }
                    v.extend((0..len).map(|_| rng.byte()));
                }
                _ => v.push(rng.below(4) as u8),
            }
        }
        innovative += fuzzing::decoder(&v);
    }
    eprintln!("innovative arrivals: {innovative}");
    assert!(
        innovative > 10_000,
        "smoke inputs must reach the decoder: {innovative}"
    );
}

#[test]
fn session_random_channels() {
    let mut rng = Rng::new(13);
    let mut sent = 0;
    for _ in 0..300 {
        let mut v = vec![0u8; rng.below(300) as usize];
        rng.fill(&mut v);
        // Loss between 0 and ~60 %: bit 7 drops.
        let p = rng.below(60);
        for b in v.iter_mut().skip(1) {
            *b = (*b & 0x7f) | if rng.below(100) < p { 0x80 } else { 0 };
        }
        sent += fuzzing::session(&v);
    }
    assert!(sent > 10_000);
}
