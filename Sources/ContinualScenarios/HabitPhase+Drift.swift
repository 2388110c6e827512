/// Habit phases as drift concepts. The labelling function is the completion logit's parameters
/// (good hour, weights, bias); the input side is when the user is active, how often reminders
/// are scheduled and opened, and how often the app is launched.
extension HabitPhase: DriftConcept {
    public func interpolated(to o: HabitPhase, fraction t: Double) -> HabitPhase {
        var p = self
        p.name = t < 0.5 ? name : o.name
        p.activityHour = lerp(activityHour, o.activityHour, t)
        p.activitySpread = lerp(activitySpread, o.activitySpread, t)
        p.irregularDays = lerp(irregularDays, o.irregularDays, t)
        p.goodHour = lerp(goodHour, o.goodHour, t)
        p.hourWeight = lerp(hourWeight, o.hourWeight, t)
        p.streakWeight = lerp(streakWeight, o.streakWeight, t)
        p.rateWeight = lerp(rateWeight, o.rateWeight, t)
        p.reminderWeight = lerp(reminderWeight, o.reminderWeight, t)
        p.openedWeight = lerp(openedWeight, o.openedWeight, t)
        p.weekendWeight = lerp(weekendWeight, o.weekendWeight, t)
        p.launchWeight = lerp(launchWeight, o.launchWeight, t)
        p.bias = lerp(bias, o.bias, t)
        p.reminderRate = lerp(reminderRate, o.reminderRate, t)
        p.openRate = lerp(openRate, o.openRate, t)
        p.launchRate = lerp(launchRate, o.launchRate, t)
        return p
    }

    public func withLabelFunction(of o: HabitPhase) -> HabitPhase {
        var p = self
        p.goodHour = o.goodHour
        p.hourWeight = o.hourWeight
        p.streakWeight = o.streakWeight
        p.rateWeight = o.rateWeight
        p.reminderWeight = o.reminderWeight
        p.openedWeight = o.openedWeight
        p.weekendWeight = o.weekendWeight
        p.launchWeight = o.launchWeight
        p.bias = o.bias
        return p
    }
}
