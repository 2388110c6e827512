import ContinualCore
import ContinualMetrics
import ContinualScenarios

/// `"device"`: the energy profile used for the cost figures and the generator of device states
/// that gates scheduled training. Absent = `phone_npu_2023` and the default `overnight` user.
public struct DeviceConfig: Codable, Sendable, Equatable {
    /// A preset name (`phone_npu_2023`, `lowend_cpu`) or an object with every constant.
    public var profile: DeviceProfile = .phoneNPU2023
    public var state: DeviceStateOptions = DeviceStateOptions()
    /// `"checkpoint_layers"`: hidden layers (0-based) whose outputs gradient checkpointing would
    /// drop and recompute (`ActivationCheckpointing`: a cost-model figure; training keeps every
    /// activation). Empty (default) = none; written to the resolved config only when set.
    public var checkpointLayers: [Int] = []

    public init(profile: DeviceProfile = .phoneNPU2023, state: DeviceStateOptions = DeviceStateOptions()) {
        self.profile = profile
        self.state = state
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case profile, state, checkpointLayers = "checkpoint_layers" }
    enum ProfileKeys: String, CodingKey, CaseIterable {
        case name, joulesPerFLOP = "joules_per_flop", joulesPerByte = "joules_per_byte"
        case flopsPerSecond = "flops_per_second", citation
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        state = try c.decode(.state, default: DeviceStateOptions())
        checkpointLayers = try c.decode(.checkpointLayers, default: [])
        try c.require(checkpointLayers.allSatisfy { $0 >= 0 } && Set(checkpointLayers).count == checkpointLayers.count,
                      .checkpointLayers, "must list distinct hidden-layer indices ≥ 0 (0 = the first hidden layer), got \(checkpointLayers)")
        if c.contains(.profile) {
            if let name = try? c.decode(String.self, forKey: .profile) {
                guard let preset = DeviceProfile.presets[name] else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .profile, in: c,
                        debugDescription: "unknown profile \"\(name)\"; presets: \(DeviceProfile.presets.keys.sorted().joined(separator: ", ")), or give an object with name, joules_per_flop, joules_per_byte, flops_per_second, citation")
                }
                profile = preset
            } else {
                let p = try c.superDecoder(forKey: .profile).strictContainer(keyedBy: ProfileKeys.self)
                let name: String = try p.decode(.name, default: "custom")
                let jf: Double = try p.decode(ProfileKeys.joulesPerFLOP, default: -1)
                let jb: Double = try p.decode(ProfileKeys.joulesPerByte, default: -1)
                let fs: Double = try p.decode(ProfileKeys.flopsPerSecond, default: -1)
                let citation: String = try p.decode(.citation, default: "")
                try p.require(jf >= 0 && jf.isFinite, .joulesPerFLOP, "required, a finite number ≥ 0 (joules per FLOP)")
                try p.require(jb >= 0 && jb.isFinite, .joulesPerByte, "required, a finite number ≥ 0 (joules per byte)")
                try p.require(fs > 0 && fs.isFinite, .flopsPerSecond, "required, a finite number > 0 (FLOP/s)")
                profile = DeviceProfile(name: name, joulesPerFLOP: jf, joulesPerByte: jb, flopsPerSecond: fs, citation: citation)
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(profile, forKey: .profile)
        try c.encode(state, forKey: .state)
        if !checkpointLayers.isEmpty { try c.encode(checkpointLayers, forKey: .checkpointLayers) }
    }
}

/// `"quantization"`: also evaluate the final model in int8 (weight-only, symmetric scales).
public struct QuantizationConfig: Codable, Sendable, Equatable {
    public var granularity: QuantizedMLP.Granularity = .perChannel

    public init(granularity: QuantizedMLP.Granularity = .perChannel) { self.granularity = granularity }

    enum CodingKeys: String, CodingKey, CaseIterable { case granularity }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        granularity = try c.decodeChoice(.granularity, default: .perChannel)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(granularity.rawValue, forKey: .granularity)
    }
}
