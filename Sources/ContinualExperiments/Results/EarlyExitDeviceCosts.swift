import ContinualCore
import ContinualMetrics
import ContinualStrategies

/// Completes an `early_exit` plugin report with what needs the device profile and the metric
/// definitions, which the plugin (in ContinualStrategies) does not see: per threshold τ, the
/// energy (`EnergyEstimate`'s E = FLOPs·J/FLOP + bytes·J/B) and latency (FLOPs / FLOP/s) of
/// one prediction at the final model's exit rate, and ACC and forgetting (Chaudhry et al. 2018)
/// of the cascade's T × T accuracy matrix at that τ (`AccuracyMatrix`).
enum EarlyExitDeviceCosts {
    static func augment(_ outcome: inout TrainingOutcome, profile: DeviceProfile) {
        for k in outcome.pluginReports.indices where outcome.pluginReports[k].name == EarlyExit.Options.typeName {
            outcome.pluginReports[k].report = augmented(outcome.pluginReports[k].report, profile: profile)
        }
    }

    static func augmented(_ report: PluginReport, profile: DeviceProfile) -> PluginReport {
        var r = report
        if let flops = r.arrays["flops_per_prediction"]?.values, let bytes = r.arrays["bytes_per_prediction"]?.values {
            r.arrays["joules_per_prediction"] = .init(
                values: zip(flops, bytes).map { $0 * profile.joulesPerFLOP + $1 * profile.joulesPerByte },
                attributes: ["device": .string(profile.name)])
            r.arrays["latency_seconds_per_prediction"] = .init(
                values: flops.map { $0 / profile.flopsPerSecond }, attributes: ["device": .string(profile.name)])
        }
        if let a = r.arrays["accuracy"], a.shape.count == 3, a.shape[0] == a.shape[1], a.shape[0] > 0 {
            let t = a.shape[0], n = a.shape[2]
            var acc: [Double] = [], forgetting: [Double] = []
            for q in 0..<n {
                let m = AccuracyMatrix((0..<t).map { i in (0..<t).map { j in a.values[(i * t + j) * n + q] } })
                acc.append(m.acc)
                forgetting.append(m.forgetting)
            }
            r.arrays["acc"] = .init(values: acc, attributes: ["meaning": .string("ACC of the cascade at each threshold")])
            r.arrays["forgetting"] = .init(values: forgetting, attributes: ["meaning": .string("average forgetting (Chaudhry et al. 2018) of the cascade at each threshold")])
        }
        return r
    }
}
