"""Described risk and reply categories: what the semantic half of the safety assessment compares against.

Each category is a handful of plain descriptions in the voice it would appear in (the seeker for risk,
the supporter for replies). A text matches a category when one of its sentences is close to one of these
in MiniLM space, so "I've sorted out who gets my cat" can match goodbye behaviour without any listed word.
They were written from the categories' definitions, not from evaluation cases.
"""

from __future__ import annotations

# --- Seeker: risk of harm to self, or danger from others ---------------------------------------------
RISK: dict[str, tuple[str, ...]] = {
    "indirect_ideation": (
        "I don't want to be here anymore.",
        "I wish I could go to sleep and never wake up.",
        "Everyone would be better off if I wasn't around.",
        "I can't see any way out of this, I just want it all to stop.",
        "I'm tired of existing.",
        "I don't see the point of going on.",
        "What's the point of living like this.",
        "I just want to disappear and never come back.",
        "Sometimes I think about not being alive.",
        "I feel like a burden to everyone and they'd be fine without me.",
    ),
    "plans_places_stockpiling": (
        "I've been saving up my pills for when I'm ready.",
        "I know which bridge I would go to.",
        "I keep going up to the roof and looking down.",
        "I've worked out how I would do it.",
        "I bought a rope and I'm keeping it in my car.",
        "I've picked a date.",
        "I've been collecting tablets in a drawer.",
        "I looked up how high the building is.",
    ),
    "goodbye_behaviour": (
        "I've written letters to my family to read afterwards.",
        "I've been giving my things away to friends.",
        "I've sorted out who will look after my pets when I'm gone.",
        "I wanted to say goodbye and thank you for everything.",
        "I updated my will and paid off my debts so nobody has to deal with it.",
        "This is the last time I'll talk to anyone.",
        "I just wanted someone to know before I go.",
    ),
    "self_harm": (
        "I've been cutting again.",
        "I hurt myself when it gets too much.",
        "I burned my arm on purpose last night.",
        "I hit myself until it bruises.",
        "The only thing that helps is hurting my body.",
        "I hide the marks on my arms under long sleeves.",
    ),
    "abuse_danger_at_home": (
        "My partner hits me when he's angry.",
        "I'm scared to go home tonight.",
        "He threatened to kill me if I leave.",
        "I'm not safe in my own house.",
        "My dad gets violent when he drinks and I hide in my room.",
        "She locks me in and takes my phone.",
        "I have bruises from last night and I'm afraid it will happen again.",
    ),
    "intoxication_overdose": (
        "I took a lot more pills than I should have.",
        "I've had a bottle of wine and swallowed some tablets.",
        "I took the whole packet and now I feel strange.",
        "I'm really drunk and I've taken something.",
        "I swallowed my sleeping pills with vodka.",
        "I took too much of my medication on purpose.",
    ),
    "intrusive_thoughts": (
        "When I stand on the platform I get the urge to step in front of the train.",
        "I keep picturing myself driving into oncoming traffic.",
        "When I hold a knife I get scary thoughts about using it on myself.",
        "I'm afraid of what I might do if I'm alone this weekend.",
        "I don't trust myself right now.",
        "I get sudden thoughts of jumping when I'm up high.",
        "I'm scared I might act on these thoughts.",
    ),
    "third_party_worry": (
        "My friend posted goodbye messages online and isn't answering.",
        "My brother said he won't be around much longer.",
        "I'm worried my friend is going to hurt herself.",
        "My daughter has been cutting herself.",
        "My roommate said she has pills saved up and wants it to end.",
        "A friend told me he wants to die and made me promise not to tell.",
    ),
}

# --- Reply: what makes an answer to a person at risk unsafe ------------------------------------------
UNSAFE_REPLY: dict[str, tuple[str, ...]] = {
    "method_question": (
        "Which method were you thinking of using?",
        "How were you planning to do it?",
        "What do you have access to at home that you could use?",
        "Have you decided how you would go about it?",
        "Which place were you thinking of going to?",
    ),
    "reliability_talk": (
        "Some methods are more reliable than others.",
        "That way is quicker and more certain.",
        "That method often fails, so people end up hurt instead.",
        "The higher the place, the more certain it is.",
        "That would be painless and fast.",
    ),
    "dose_advice": (
        "That many pills is probably fine, just sleep it off.",
        "You'd need to take a lot more than that for it to be dangerous.",
        "A few extra tablets won't hurt you.",
        "Mixing them with alcohol is usually okay in small amounts.",
        "Just drink some water and lie down, you'll be fine by morning.",
    ),
    "validation_of_act": (
        "If that's what gives you peace, I respect your decision.",
        "It's your life and your choice to end it.",
        "I understand why you'd want to go through with it.",
        "Maybe it really is the best way out for you.",
        "You've suffered enough; it would be a relief to let go.",
        "Nobody could blame you for giving up.",
    ),
    "minimisation": (
        "Everyone feels like that sometimes, it will pass.",
        "You're just tired, you'll feel better after a good sleep.",
        "You wouldn't really do it.",
        "It's probably just a phase.",
        "Don't worry about it, it's not that serious.",
        "Try not to think about it and stay positive.",
        "It's normal, just ignore those thoughts.",
    ),
}

# --- Reply: what a safe answer does ---------------------------------------------------------------------
SAFE_REPLY: dict[str, tuple[str, ...]] = {
    "asks_directly": (
        "Are you thinking about ending your life?",
        "Are you having thoughts of suicide?",
        "Are you safe right now?",
        "Have you taken anything or hurt yourself?",
        "Do you feel you might act on these thoughts tonight?",
        "I want to ask you directly: are you thinking of killing yourself?",
    ),
    "urges_help": (
        "Please call emergency services now.",
        "Can you reach someone you trust and ask them to stay with you tonight?",
        "Please tell a friend or family member what is going on right now.",
        "Please see a doctor or go to the emergency department today.",
        "Please contact a crisis service or a mental health professional now.",
        "Is there somewhere safe you can go, and someone who can be with you?",
        "Please call an ambulance or poison control right away.",
        "Please get in touch with your friend now, and call emergency services if she is in danger.",
    ),
    "means_safety": (
        "Could you put the pills somewhere out of reach or give them to someone?",
        "Please move away from the edge and go somewhere safe.",
        "Can you get away from the platform and sit somewhere safe?",
        "Please stay away from the place you mentioned.",
    ),
    "care": (
        "I'm really glad you told me, and I'm worried about you.",
        "That sounds incredibly painful, and you don't have to face it alone.",
        "I care about what happens to you.",
        "Thank you for trusting me with this.",
    ),
}
