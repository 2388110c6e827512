/// Energy and speed constants of a device, used to turn analytic FLOP and byte counts into
/// joules and seconds. Numbers are order-of-magnitude estimates from the cited sources, meant to
/// be replaced by measurements (JSON: `"device": {"profile": {...}}` or a preset name).
public struct DeviceProfile: Sendable, Equatable, Hashable, Codable {
    public var name: String
    /// Energy of one floating-point operation (a multiply-add counts as 2), joules.
    public var joulesPerFLOP: Double
    /// Energy of moving one byte between DRAM and the compute unit, joules.
    public var joulesPerByte: Double
    /// Sustained FLOP/s on small-MLP kernels (used for the latency estimate only).
    public var flopsPerSecond: Double
    /// Where the constants come from.
    public var citation: String

    public init(name: String, joulesPerFLOP: Double, joulesPerByte: Double, flopsPerSecond: Double, citation: String) {
        self.name = name
        self.joulesPerFLOP = joulesPerFLOP
        self.joulesPerByte = joulesPerByte
        self.flopsPerSecond = flopsPerSecond
        self.citation = citation
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, joulesPerFLOP = "joules_per_flop", joulesPerByte = "joules_per_byte"
        case flopsPerSecond = "flops_per_second", citation
    }

    /// A recent phone SoC running fp32 MLP training on its CPU/NPU complex (2023-class, 4–5 nm,
    /// LPDDR5). 0.5 pJ/FLOP and 40 pJ/byte (≈ 5 pJ/bit LPDDR5 access + interface).
    public static let phoneNPU2023 = DeviceProfile(
        name: "phone_npu_2023", joulesPerFLOP: 0.5e-12, joulesPerByte: 40e-12, flopsPerSecond: 20e9,
        citation: "Order of magnitude: Horowitz, 'Computing's energy problem', ISSCC 2014 (45 nm: fp32 add 0.9 pJ, "
            + "mult 3.7 pJ; DRAM ~160 pJ/B) scaled to 4-5 nm (~5x lower logic energy); LPDDR5 ~4-5 pJ/bit access energy "
            + "(JEDEC LPDDR5 vendor figures); Sze et al., Proc. IEEE 105(12) 2017 (DRAM access ~200x a MAC). Replace with measurements.")

    /// A low-end phone or embedded CPU (28–45 nm, LPDDR3/DDR3, no NPU): 20 pJ/FLOP including
    /// instruction overhead, 160 pJ/byte of DRAM traffic (Horowitz 2014).
    public static let lowendCPU = DeviceProfile(
        name: "lowend_cpu", joulesPerFLOP: 20e-12, joulesPerByte: 160e-12, flopsPerSecond: 2e9,
        citation: "Horowitz, 'Computing's energy problem (and what we can do about it)', ISSCC 2014: 45 nm fp32 "
            + "multiply 3.7 pJ + add 0.9 pJ, instruction overhead ~70 pJ amortised over SIMD lanes (-> ~20 pJ/FLOP); "
            + "DRAM read 1.3-2.6 nJ per 64 bit (-> ~160-320 pJ/B, lower end used). Replace with measurements.")

    /// Presets by name.
    public static let presets: [String: DeviceProfile] = [
        phoneNPU2023.name: phoneNPU2023, lowendCPU.name: lowendCPU,
    ]
}
