"""The ways a shopper says one requirement aloud: several reply forms per field and kind of value.

stages/replies.py picks one with the verbalisation stage's seeded generator, so two tasks asking about
the same field rarely hear the same sentence. Placeholders: {value} (the value in speech case), {number}
and {unit} (a measure), {age} (an age said as a person says it: "ages 4 to 12", "a 6-month-old"), {n} (a
bound's number, money with its "$"), {label} (the field's label). A form whose sentence would not state
the value (checked with stages/replies.py `reply_states`, as stage 6 checks it) is never chosen. The first
form of each list is the one used without a generator (unit tests, older splits regenerate unchanged).

Bound forms exist for one inclusive end only ("up to $25", "4 stars or higher"); every one states the
bound's direction in words stages/lemmas.py `states_bound` reads, so stage 6 still sees the value.
"""

from __future__ import annotations

# Per field and value kind: "plain", "adjective" (a value that describes the product, stages/replies.py
# `reads_as_adjective`, for fields whose values are nouns or adjectives), "measure", "count" (for Size), "age"
# (age fields), "label" (a care label's wording), "max" / "min" (a one-ended inclusive bound). A kind absent falls
# back to "plain"; a field absent to GENERIC.
FORMS: dict[str, dict[str, tuple[str, ...]]] = {
    "Material": {"plain": ("I'd like it made of {value}.", "I'm after one made from {value}.",
                           "{value} would be my pick for the material.", "It has to be made of {value}.")},
    # "plain": a thing the product has ("a kickstand", "card slots"); "adjective": what it is ("waterproof")
    "Special Feature": {"plain": ("One thing it really must have: {value}.",
                                  "It has to come with {value}.", "The must-have for me is {value}.",
                                  "I really need it to have {value}."),
                        "adjective": ("It has to be {value}, that matters most.", "I really need it to be {value}.",
                                      "Above all, it should be {value}.", "The must-have for me: it's {value}.")},
    # "adjective": a shape word that describes ("square", "round"); "noun": a thing it is shaped as ("heart")
    "Shape": {"plain": ("The shape should be {value}.", "I'd like a {value} shape.", "A {value} shape suits me."),
              "adjective": ("The shape should be {value}.", "I'd like a {value} one.", "Something {value} in shape."),
              "noun": ("I'd like it {value}-shaped.", "Something shaped like a {value}.",
                       "A {value} shape suits me.")},
    "Size": {"plain": ("I need the {value} size.", "The {value} size would fit me.", "I'd go for {value} in size."),
             "measure": ("It should measure {value}.", "About {value} would be right.", "I need one that's {value}."),
             "count": ("I need {value}.", "{value} would be the right amount.", "I'd like it as {value}.")},
    "Mounting Type": {"plain": ("It has to suit a {value} setup.", "I'll set it up as {value}.",
                                "I need it for {value} mounting.")},
    "Form Factor": {"plain": ("I want the {value} type.", "I'd go for the {value} style.",
                              "A {value} design suits me.")},
    # "plain": a link or standard ("Bluetooth", "USB"); "adjective": a kind of connection ("wired", "wireless")
    "Connectivity Technology": {"plain": ("It needs to connect over {value}.", "I'd like it to use {value}.",
                                          "{value} is how I want to hook it up."),
                                "adjective": ("I want it {value}.", "It should be {value}.",
                                              "A {value} one is what I need.")},
    "Connector Type": {"plain": ("I need a {value} connector.", "My device takes {value}, so that's the plug I need.",
                                 "It has to have a {value} end.")},
    "Screen Size": {"plain": ("The screen should be {value}.", "A {value} screen is what I have in mind."),
                    "measure": ("I'd like a {number}-{unit} screen.", "I'm after a {number}-{unit} screen.",
                                "My space fits a {number}-{unit} screen.")},
    "Finish Type": {"plain": ("I want a {value} finish.", "A {value} finish would look best to me.",
                              "I'd pick a {value} finish.")},
    "Item Form": {"plain": ("I prefer it in {value} form.", "I find the {value} form easiest to use.",
                            "I'd like the {value} kind.")},
    "Power Source": {"plain": ("I want it to be {value}.", "It should run {value}.", "{value} suits how I'll use it.")},
    # what a computer runs and what a mouse or keyboard works with: said so that both read true
    "Operating System": {"plain": ("It has to work with {value}.", "I'm on {value}, so it has to work with that.",
                                   "I use {value}, so it needs to support that.")},
    "RAM": {"plain": ("I need {value} RAM.", "{value} of RAM should do it."),
            "measure": ("I need {value} of RAM.", "{value} of memory should do it.",
                        "At this point I'd want {value} of RAM.")},
    "Hard Drive": {"plain": ("I need a {value}.", "I'd like a {value} for storage."),
                   "measure": ("I need {value} of storage.", "{value} of space should be plenty for me.",
                               "It should come with {value} of storage.")},
    "Closure": {"plain": ("I want a {value} closure.", "I like a {value} closure.",
                          "I find a {value} closure easiest.")},
    # "plain": an activity or something uncountable ("travel", "gaming", "cold drinks"); "adjective": a kind of
    # use ("outdoor", "decorative", "personal"); "thing": a countable thing or place it serves ("car", "garden")
    "Recommended Uses For Product": {"plain": ("I'll mainly use it for {value}.", "It's mostly for {value}.",
                                               "I need it for {value}.", "I want it for {value}, mainly."),
                                     "adjective": ("It's mostly for {value} use.", "I need it for {value} use.",
                                                   "It's meant for {value} use."),
                                     "thing": ("It's mostly for the {value}.", "I'll mainly use it for the {value}.",
                                               "I need it for the {value}.")},
    "Room Type": {"plain": ("It's for the {value}.", "It's going in the {value}.", "I'll put it in the {value}.")},
    # "plain": an event people celebrate ("a birthday celebration": said before a noun it takes "a" whether it is a
    # holiday or not), never "a birthday present": party supplies and a room's decor are no gift; "thing": a
    # countable event or place ("a picnic", "a coffee shop"); "season": a season, a use or who it is for, said bare
    # ("for spring", "for travel", "for women")
    "Occasion": {"plain": ("It's for a {value} celebration.", "I'll use it for a {value} celebration.",
                           "It's meant for a {value} celebration."),
                 "thing": ("It's for a {value}.", "I'll use it at a {value}.", "I need it for a {value}."),
                 "season": ("It's for {value}.", "I'll use it for {value}.", "It's meant for {value}.")},
    "Ink Color": {"plain": ("I want it to write in {value}.", "{value} ink, please; that's what I use.",
                            "The ink should be {value}.")},
    "Sport Type": {"plain": ("It's for {value}.", "I'll use it for {value}.", "I need it for {value}.")},
    # "group": a plural that names who it is for ("kids", "toddlers")
    "Age Range (Description)": {"plain": ("It's for a {value}.", "The person using it is a {value}.",
                                          "It has to suit a {value}."),
                                "group": ("It's for {value}.", "It's meant for {value}.", "It has to suit {value}."),
                                "age": ("It's for {age}.", "I'm buying it for {age}.", "It has to suit {age}.")},
    "Manufacturer recommended age": {"plain": ("The recommended age is {value}.", "It should be meant for {value}."),
                                     "age": ("It's for {age}.", "I'm buying it for {age}.",
                                             "It has to be suitable for {age}.")},
    # "plain": what one does to clean it ("machine wash", "wipe with dry cloth"); "adjective": what it withstands
    # ("dishwasher safe"); "label": the label's own words, not something one does ("hand wash only", "do not bleach")
    "Product Care Instructions": {"plain": ("The care label should say {value}.", "It has to be fine to {value}.",
                                            "I only buy things I can {value}.", "I need something I can {value}."),
                                  "adjective": ("It has to be {value}.", "I only buy things that are {value}.",
                                                "I need it to be {value}."),
                                  "label": ("The care label should say {value}.",
                                            "I'd like the care label to say {value}.",
                                            "It should say {value} on the care label.")},
    "Indoor/Outdoor Usage": {"plain": ("It's for {value} use.", "I'll be using it {value}s.",
                                       "It's going to be used {value}s.")},
    "Reusability": {"plain": ("It should be {value}.", "I want something {value}.", "I'd rather it be {value}.")},
    "Battery Cell Composition": {"plain": ("The battery should be {value}.", "I want {value} cells in it.",
                                           "It has to take {value} batteries.")},
    "Voltage": {"plain": ("It has to be {value}.", "My setup needs {value}."),
                "measure": ("It has to run on {value}.", "My setup needs {value}.", "It must work at {value}.")},
    "Capacity": {"plain": ("It needs to hold {value}.", "I'd like it to take {value}.",
                           "{value} is the capacity I need."),
                 "measure": ("It needs to hold {value}.", "I'd like it to take {value}.",
                             "{value} is the capacity I need.")},
    "Frame Type": {"plain": ("For the frame, I want {value}.", "I'd like it {value}.", "I prefer it {value}.")},
    "Wall Art Form": {"plain": ("I want it as a {value}.", "A {value} is what I'm after.", "I'd hang a {value}.")},
    "Orientation": {"plain": ("It should be in {value} orientation.", "I need it {value}.", "It has to be {value}.")},
    "Top Style": {"plain": ("I want a {value} top.", "The curtains should have a {value} top.",
                            "I'd like the {value} kind of top.")},
    "Pile Height": {"plain": ("I'd like a {value} pile.", "A {value} pile suits the room.", "I want it {value} pile.")},
    "Rug Form Type": {"plain": ("I need a {value}.", "A {value} is what fits the space.", "I'm after a {value}.")},
    "Construction Type": {"plain": ("It should be {value}.", "I want it {value}.", "I'd like {value} construction.")},
    "Back Material Type": {"plain": ("The backing should be {value}.", "I want a {value} backing.",
                                     "It needs {value} on the back.")},
    "Handle Material": {"plain": ("I want a {value} handle.", "The handle should be {value}.",
                                  "I like the feel of a {value} handle.")},
    "Operation Mode": {"plain": ("I'd like {value} operation.", "It should work {value}.", "I want it {value}.")},
    # Persona-only fields: said when the profile's value is stated aloud.
    "Brand": {"plain": ("I always go with {value}.", "I stick with {value}.", "It should be {value}; I trust them.")},
    "Color": {"plain": ("I'd like it in {value}.", "{value} is my colour.", "I'm after {value}.")},
    "Style": {"plain": ("My style is {value}.", "I like things {value}.", "I'd pick {value}.")},
    "Pattern": {"plain": ("I'd like a {value} pattern.", "Something {value}, please.", "I go for {value}.")},
    "Theme": {"plain": ("I'd like a {value} theme.", "Something with {value} on it.", "The theme should be {value}."),
              "adjective": ("I'd like a {value} theme.", "Something {value}, please.", "I want it to look {value}.")},
    "Scent": {"plain": ("I like it {value}.", "My pick for scent is {value}.", "I'd go for {value}.")},
    "Skin Type": {"plain": ("It has to suit {value} skin.", "My skin is {value}.", "I need it for {value} skin.")},
    "Hair Type": {"plain": ("It has to suit {value} hair.", "My hair is {value}.", "I need it for {value} hair.")},
    # the labels list watches as phone models too ("Fitbit Versa 2" for bands): no form calls the device a phone
    "Compatible Phone Models": {"plain": ("It's for my {value}.", "I have the {value}, so it has to fit that.",
                                          "It needs to fit my {value}.")},
    "Compatible Devices": {"plain": ("It has to work with my {value}.", "I'll use it with my {value}.",
                                     "It needs to fit my {value}.")},
    "Department": {"plain": ("I shop the {value} range.", "It should be from the {value} range.",
                             "I'm after the {value} version.")},
    "Item Firmness Description": {"plain": ("I like it {value}.", "{value} suits me best.", "I'd want it {value}.")},
    "Fill Material": {"plain": ("I prefer a {value} fill.", "It should be filled with {value}.",
                                "I like {value} filling.")},
    "Hand Orientation": {"plain": ("I need the {value}-hand version.", "I'm {value}-handed.",
                                   "It has to be for {value}-handed use.")},
    # Bounds: {n} is the number with its unit ("$25", "4.5", "100").
    "price": {"max": ("I can spend no more than {n} on it.", "Anything up to {n} works for me.",
                      "I'd like to keep it to {n} or less.", "My budget is at most {n}."),
              "min": ("I can spend at least {n} on it.", "I expect to pay {n} or more.")},
    "average_rating": {"min": ("I only buy things rated at least {n} stars.", "It should have {n} stars or higher.",
                               "I look for {n} stars or better before I buy.", "I'd want it rated {n} stars and up.")},
    "rating_number": {"min": ("I'd like something lots of people have tried, with at least {n} ratings.",
                              "I trust things with {n} or more reviews.",
                              "It should have at least {n} reviews, so I know it's proven.",
                              "Plenty of people should have rated it: {n} ratings or more.")},
}
GENERIC: dict[str, tuple[str, ...]] = {"plain": ("I'd like {value}.", "It should be {value}.", "I'm after {value}.")}

# Replies to a question about something the profile holds. "points": the reply sends the agent to the
# profile without saying the value; "states": it says the value (a FORMS sentence) and mentions the profile.
POINTS: tuple[str, ...] = (
    "That's in my profile: I saved {mine} there.",
    "Have a look at my profile; {mine} is saved there.",
    "I put {mine} in my profile, so check it there.",
    "My profile has that. It lists {mine}.",
    "I already noted {mine} in my profile.",
)
# How a profile reply names a requirement it points to (`profile_name`): "my" where people say it of themselves
# ("my budget", "my phone model"), else "the <label> I want" ("the material I want", never "my material").
PROFILE_NAMES: dict[str, str] = {"price": "my budget", "average_rating": "the star rating I need",
                                 "rating_number": "how many ratings I want to see",
                                 "Compatible Phone Models": "my phone model", "Compatible Devices": "my device",
                                 "Operating System": "my operating system",
                                 "Special Feature": "the feature I must have",
                                 "Recommended Uses For Product": "what I'll use it for",
                                 "Age Range (Description)": "the age group", "Department": "my usual department",
                                 "Item Firmness Description": "how firm I like it", "Hand Orientation": "my handedness"}


def profile_name(name: str, label: str) -> str:
    """What a profile reply calls the requirement of field `name` (its `label` when PROFILE_NAMES has none)."""
    return PROFILE_NAMES.get(name, f"the {label} I want")


STATES_TAIL: tuple[str, ...] = (" It's in my profile too.", " I noted that in my profile as well.",
                                " My profile says so too.", "")
