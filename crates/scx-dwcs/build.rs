//! Builds the BPF side (src/bpf/main.bpf.c) with clang and generates its skeleton.

fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("clang and the sched_ext headers")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
        .expect("building the BPF scheduler");
}
