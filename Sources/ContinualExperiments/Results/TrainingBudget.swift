import ContinualCore
import Foundation
import ContinualMetrics

/// What a run spent training each experience, so no comparison hides its compute: the budget it
/// was given (`training.epochs` or `training.steps_per_experience`) and, per experience, the
/// optimizer steps, epochs, samples processed and training FLOPs it actually used.
///
/// Training FLOPs of experience i follow the cost model's conventions (`CostModel`):
/// `samples_processed[i] · flops_per_training_sample` (forward + backward of every row, replayed
/// rows included) `+ (steps[i] + extra gradient steps[i]) · optimizer FLOPs per trainable parameter
/// · trainable_parameters[i]` (the extra gradient steps: `TrainingProgress.extraSteps`, a federated
/// own-loop round's; 0 elsewhere) `+ extra_flops[i]` (what the plugins add: per-step terms and per-experience passes such as
/// EWC's Fisher or MAS's importance). Evaluation is not counted.
public struct TrainingBudget: Sendable, Equatable {
    /// "epochs", "steps_per_experience" or "flops_per_experience".
    public var kind: String
    /// The configured value of that key.
    public var value: Int
    public var steps: [Int]
    public var epochs: [Int]
    public var samplesProcessed: [Int]
    public var trainingFLOPs: [Int]

    public init(config: TrainingConfig, outcome o: TrainingOutcome, costs c: CostModel) {
        if let steps = config.stepsPerExperience {
            (kind, value) = ("steps_per_experience", steps)
        } else if let flops = config.flopsPerExperience {
            (kind, value) = ("flops_per_experience", Int(flops))
        } else {
            (kind, value) = ("epochs", config.epochs)
        }
        steps = o.steps
        epochs = o.lossCurve.map(\.count)
        samplesProcessed = o.samplesProcessed
        let perParameter = c.trainableParameters > 0 ? c.flopsPerOptimizerStep / c.trainableParameters : 0
        let gradientSteps = o.progress.gradientSteps
        trainingFLOPs = o.samplesProcessed.indices.map { i in
            let trainable = i < o.trainableParameters.count ? o.trainableParameters[i] : c.trainableParameters
            let extra = i < o.progress.extraFLOPs.count ? o.progress.extraFLOPs[i] : 0
            return o.samplesProcessed[i] * c.flopsPerTrainingSample + gradientSteps[i] * perParameter * trainable + extra
        }
    }

    /// "375 steps/exp", "4 epochs/exp" or "5.5e+10 FLOPs/exp": the budget as tables print it.
    public var label: String {
        switch kind {
        case "epochs": return "\(value) epoch\(value == 1 ? "" : "s")/exp"
        case "flops_per_experience": return String(format: "%.2g FLOPs/exp", Double(value))
        default: return "\(value) steps/exp"
        }
    }
}
