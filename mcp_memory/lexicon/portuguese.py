"""Portuguese, as data: the second lexicon, proof that a language is a module and no code (Portugal
and Brazil alike where the words differ: "equipa" / "equipe", "telemóvel" / "celular").

A handful of attributes, the commonest people state of each other; a key this lexicon does not
know is an attribute of its own, as in English. The attributes' names are the English ones: they
are identifiers stored with each fact, so a key written in either language is one attribute.

What stays English whatever the lexicon (docs/languages.md): full text stems with English's rules
(`memories.fts`, so `text_search` is 'english'); names are runs of capitalised ASCII letters; a
possessive the names and relation rules read is "'s" ("o irmão do Kenji" names no relation; a
question's hop reads "o gerente do Kwame", `possessive_words`); the decisions guard's wording
rules were found on English notes."""

from __future__ import annotations

from . import Attribute, Lexicon
from .english import CAR_MAKES, EDITORS  # makes and editors are names, the same in every language

ATTRIBUTES = (
    Attribute("home city", ("cidade", "cidade onde mora", "cidade atual", "mora em", "onde mora", "vive em",
                            "onde vive", "reside em", "residência", "local de residência", "localização",
                            "baseado em", "baseada em"),
              ("morar", "mora", "vive", "reside", "cidade", "mudou", "mudar"), kind="fact", answers="place"),
    Attribute("hometown", ("cidade natal", "terra natal", "naturalidade", "nasceu em", "local de nascimento",
                           "onde cresceu", "cresceu em"), ("natal", "nasceu", "cresceu"), kind="fact", answers="place",
              settled=True),
    Attribute("birthday", ("aniversário", "data de nascimento", "dia de anos"), ("aniversário",), kind="fact",
              answers="time", settled=True),
    Attribute("partner", ("parceiro", "parceira", "cônjuge", "esposa", "esposo", "marido", "namorado", "namorada",
                          "noivo", "noiva", "casado com", "casada com"),
              ("parceiro", "parceira", "cônjuge", "esposa", "marido", "namorado", "namorada", "casado", "casada"),
              kind="fact", answers="person"),
    Attribute("phone number", ("telefone", "número de telefone", "telemóvel", "celular", "contacto", "contato",
                               "número"), ("telefone", "telemóvel", "celular"), kind="fact"),
    Attribute("email", ("email", "e-mail", "correio eletrónico", "correio eletrônico", "endereço de email"),
              ("email", "e-mail"), kind="fact"),
    Attribute("car", ("carro", "automóvel", "veículo", "o que conduz", "o que dirige", "conduz", "dirige"),
              ("carro", "conduz", "conduzir", "dirige", "dirigir", "veículo", "automóvel", *CAR_MAKES), kind="fact",
              named=True),
    Attribute("pets", ("animais de estimação", "animal de estimação", "animais", "cães", "gatos"),
              ("animal", "animais", "cão", "cães", "gato", "gatos", "cachorro", "coelho", "hamster", "papagaio",
               "periquito", "tartaruga", "lagarto", "peixe-dourado", "furão"), single=False, kind="fact"),
    Attribute("allergies", ("alergias", "alergia", "alérgico a", "alérgica a"), ("alergia", "alérgico", "alérgica"),
              single=False, kind="fact"),
    Attribute("languages spoken", ("línguas", "idiomas", "línguas faladas", "fala"), ("fala", "idioma"),
              single=False, kind="fact"),
    Attribute("employer", ("empregador", "empresa", "trabalha em", "trabalha para", "onde trabalha",
                           "entidade empregadora", "empresa atual"),
              ("empregador", "empresa", "trabalha", "emprego", "startup"),
              kind="fact", answers="place"),
    Attribute("job title", ("cargo", "função", "título", "posição", "profissão"), ("cargo", "função", "promovido",
                                                                                 "promovida"), kind="fact"),
    Attribute("manager", ("gestor", "gestora", "chefe", "gerente", "supervisor", "supervisora", "responde a",
                          "reporta a"), ("gestor", "gestora", "chefe", "gerente", "supervisor", "reporta"),
              kind="fact", answers="person"),
    Attribute("doctor", ("médico", "médica", "médico de família", "clínico geral"), ("médico", "médica"),
              kind="fact", answers="person"),
    Attribute("dentist", ("dentista",), ("dentista",), kind="fact", answers="person"),
    Attribute("therapist", ("terapeuta", "psicólogo", "psicóloga"), ("terapeuta", "psicólogo", "psicóloga"),
              kind="fact", answers="person"),
    Attribute("team", ("equipa", "equipe", "departamento", "grupo"), ("equipa", "equipe", "departamento"), kind="fact",
              named=True),
    Attribute("editor", ("editor", "editor de texto", "editor de código", "ide"), ("editor", *EDITORS),
              kind="preference"),
    Attribute("favourite food", ("comida favorita", "comida preferida", "prato favorito", "prato preferido",
                                 "cozinha"), ("comida", "prato", "cozinha"), kind="preference"),
    Attribute("favourite drink", ("bebida favorita", "bebida preferida", "bebida"), ("bebida",), kind="preference"),
    Attribute("gym", ("ginásio", "academia", "clube de fitness"), ("ginásio", "academia"), kind="fact",
              answers="place"),
    Attribute("internet provider", ("fornecedor de internet", "operadora de internet", "provedor de internet",
                                    "internet", "banda larga"), ("internet",), kind="fact"),
    # "seguro" and "segura" are also "safe" ("Onde é seguro estacionar?"): the insurer's own word and
    # the policy name it.
    Attribute("insurer", ("seguradora", "companhia de seguros"),
              ("seguradora", "apólice"), kind="fact"),
)

PORTUGUESE = Lexicon(
    language="portuguese",
    text_search="english",  # what memories.fts is stored with; see the module's note
    key_fillers=frozenset("""o a os as um uma uns umas seu sua seus suas dele dela deles delas meu minha meus
        minhas nosso nossa atual atuais novo nova principal habitual preferido preferida padrão de do da dos das é são
        era eram foi que qual quem ele ela eles elas""".split()),
    stop_words=frozenset("""a o as os um uma de do da dos das em no na nos nas por para com sem sobre e ou mas se
        que qual quais quem onde quando como porque é são era eram foi ser estar está estão tem têm ter isso isto
        este esta esse essa aquele aquela eu me mim meu minha nós nosso nossa você vocês ele ela eles elas seu sua
        dele dela agora atualmente ainda hoje dia momento diga favor pode poderia""".split()),
    user_names=frozenset({"eu", "mim", "me", "comigo", "o usuário", "a usuária", "usuário", "usuária",
                          "o utilizador", "a utilizadora", "utilizador", "utilizadora", "você", "meu", "minha"}),
    attributes=ATTRIBUTES,
    whole_words=frozenset({"casado", "casada", "seguradora", "seguradoras", "comida", "comidas"}),
    clitics=("-se", "-me", "-te", "-nos", "-vos", "-lhe", "-lhes"),
    idioms=("mudou de ideias", "mudou de ideia", "mudou de opinião", "mudar de ideias", "mudar de ideia",
            "mudar de opinião"),
    past_qualifiers=frozenset({"anterior", "antigo", "antiga", "antigos", "antigas", "ex", "velho", "velha"}),
    value_words=frozenset({"nome", "cidade", "local", "localização", "modelo", "marca", "tipo"}),
    question_words={"quem": "person", "onde": "place", "quando": "time"},
    question_determiners=frozenset({"qual", "quais", "que"}),
    ended=("já não", "deixou de", "parou de", "desistiu de", "acabou", "terminou", "vendeu", "livrou-se de"),
    not_names=frozenset("""o a os as um uma uns umas e ou mas se que qual quais quem onde quando como porque porquê
        quanto quanta quantos quantas é são era eram foi foram ser estar está estão esteve tem têm tinha ter há
        pode podia poderia deve deveria vai vou diga mostre liste encontre dê algum alguma alguém algo nenhum
        meu minha meus minhas nosso nossa seu sua seus suas teu tua este esta estes estas esse essa isso isto
        aquele aquela aqui ali lá em no na nos nas de do da dos das ao à aos às para por pelo pela com sem sobre
        eu tu ele ela nós eles elas você vocês me mim te lhe dr dra sr sra prof profa
        segunda terça quarta quinta sexta sábado domingo segunda-feira terça-feira quarta-feira quinta-feira
        sexta-feira segundas terças quartas quintas sextas sábados domingos
        janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro
        dezembro
        depois antes durante desde até embora enquanto entre além apesar exceto conforme considerando segundo
        também então assim porém contudo portanto entretanto hoje ontem amanhã recentemente talvez sim não""".split()),
    prepositions=frozenset("""em no na nos nas de do da dos das ao à aos às para por pelo pela com sem sobre
        depois antes durante desde até entre além apesar exceto conforme segundo""".split()),
    opening_verbs=frozenset("""prefere usa gosta adora odeia quer precisa trabalha mora vive conduz fala joga lê
        escreve mudou começou deixou comprou vendeu evita mudei comecei deixei comprei vendi acabei cheguei fui
        tive fiz troquei marquei reservei voltei liguei atualizei instalei removi substituí""".split()),
    name_keys=("nome", "primeiro nome", "nome completo", "nome próprio", "alcunha"),
    subject_verbs=frozenset("""é era foi tem tinha está estava vai vive mora trabalha fez disse""".split()),
    subject_verb_endings=("ou", "eu", "iu", "a", "e"),
    subject_joiners=("e", "&"),
    verb_adverbs=frozenset("""também já ainda finalmente recentemente nunca sempre agora só logo entretanto
        afinal""".split()),
    # Not "nos" (also "em" + "os": "nos Estados Unidos") nor the clitic "-me" (no whole word).
    user_words=("eu", "me", "mim", "comigo", "meu", "minha", "meus", "minhas", "nós", "nosso", "nossa", "nossos",
                "nossas", "o usuário", "a usuária", "usuário", "usuária", "o utilizador", "a utilizadora",
                "utilizador", "utilizadora"),
    classifiers=frozenset({"equipa", "equipe", "projeto", "projecto"}),
    agent_labels=("assistente", "agente", "ia", "bot", "claude", "modelo", "sistema", "ferramenta"),
    head_last=False,
    # "a irmã do usuário" puts the user after the person: no rule reads it yet.
    user_possessives=("meu", "minha", "meus", "minhas", "nosso", "nossa", "nossos", "nossas"),
    possessive_words=("do", "da", "de", "dos", "das"),
    articles=("o", "a", "os", "as", "um", "uma"),
    with_user=("e eu", "e nós", "e o usuário", "e a usuária", "e o utilizador"),
    # Not "chefe", "gestor" ("O meu chefe é o Ahmed" is the user's own fact: they are `leaders`), nor
    # "médico", "dentista", "terapeuta" (one at a time, `leaders` too), nor "equipa".
    people=("amigo", "amiga", "melhor amigo", "melhor amiga", "vizinho", "vizinha", "parceiro", "parceira",
            "esposa", "esposo", "marido", "mulher", "cônjuge", "namorado", "namorada", "noivo", "noiva", "filho",
            "filha", "criança", "bebé", "bebê", "mãe", "pai", "irmão", "irmã", "primo", "prima", "tio", "tia",
            "sobrinho", "sobrinha", "avó", "avô", "sogro", "sogra", "cunhado", "cunhada", "senhorio", "senhoria",
            "colega", "colega de casa", "colega de quarto", "cliente", "mentor", "mentora", "professor",
            "professora", "aluno", "aluna", "estagiário", "estagiária", "consultor",
            "consultora", "advogado", "advogada", "contabilista", "contador", "contadora", "fundador", "fundadora",
            "sócio", "sócia", "ex"),
    leaders=("chefe", "gestor", "gestora", "gerente", "supervisor", "supervisora", "líder", "médico", "médica",
             "dentista", "terapeuta"),
    naming_leaders=("é", "era", "foi", "são", "eram", "foram", "será", "passou a ser", "mudou para", "chama-se",
                    "se chama"),
    third_persons=("ela", "dela", "ele", "dele"),
    third_person_subjects=("ela", "ele"),
    kin_names=("mãe", "mamã", "mamãe", "pai", "papá", "papai", "avó", "avô", "vovó", "vovô"),
    present=("agora", "neste momento", "de momento", "no momento", "atualmente", "hoje em dia", "nos dias de hoje",
             "presentemente", "ainda", "já não", "mais recente", "hoje", "até agora", "até hoje", "por agora"),
    past=("antes", "dantes", "anteriormente", "antigamente", "originalmente", "inicialmente", "no passado",
          "naquela altura", "naquela época", "na altura", "costumava", "costumavam", "no ano passado", "há anos",
          "outrora", "no início"),
    past_auxiliaries=frozenset({"foi", "foram", "era", "eram", "estava", "estavam", "tinha", "tinham"}),
    months={m: n for n, m in enumerate("""janeiro fevereiro março abril maio junho julho agosto setembro outubro
        novembro dezembro""".split(), start=1)},
    month_abbreviations={m: n for n, m in enumerate("jan fev mar abr mai jun jul ago set out nov dez".split(),
                                                    start=1)},
    date_bounds={"antes de": "before", "até": "until", "até ao": "until", "até ao fim de": "until",
                 "depois de": "after", "após": "after", "desde": "since", "a partir de": "since"},
    date_leads=("em", "no", "na", "no dia", "durante", "de", "do", "ao longo de", "no início de", "em meados de",
                "no final de", "por volta de"),
    month_leads=("em", "durante", "no mês de", "ao longo de", "no início de", "em meados de", "no final de",
                 "em finais de"),
    day_suffixes=("º",),
    day_month_joiners=("de",),
    month_year_joiners=("de",),
    days_from_today={"ontem": -1, "anteontem": -2, "amanhã": 1},
    weekdays={"segunda": 0, "segunda-feira": 0, "terça": 1, "terça-feira": 1, "quarta": 2, "quarta-feira": 2,
              "quinta": 3, "quinta-feira": 3, "sexta": 4, "sexta-feira": 4, "sábado": 5, "domingo": 6},
    time_units={"dia": "day", "dias": "day", "semana": "week", "semanas": "week", "mês": "month", "meses": "month",
                "ano": "year", "anos": "year"},
    counts={"um": 1, "uma": 1, "dois": 2, "duas": 2, "três": 3, "quatro": 4, "cinco": 5, "seis": 6, "sete": 7,
            "oito": 8, "nove": 9, "dez": 10, "onze": 11, "doze": 12},
    ago_after=("atrás",),
    ago_before=("há", "faz"),
    last_after=("passado", "passada"),
    next_before=("próximo", "próxima"),
    next_after=("que vem",),
    greetings=("olá", "oi", "obrigado", "obrigada", "querido", "querida", "caro", "cara", "tchau", "adeus"),
    # Verbs whose forms the stemmer leaves apart, the infinitive first, as a question asks with it
    # ("Onde é que costumamos ir?" / "Fomos ao Porto"; forms that are stop words, "foi", left out).
    word_forms=tuple(group.strip() for group in """
        ir vou vai vamos vão fui foi fomos foram ido|fazer faço faz fazemos fazem fiz fez fizemos fizeram feito
        |ter tenho tem temos têm tive teve tivemos tiveram tido
        |dizer digo diz dizemos dizem disse dissemos disseram dito|ver vejo vê vemos veem vi viu vimos viram visto
        |vir venho vem vimos vêm vim veio vieram vindo
        |trazer trago traz trazemos trazem trouxe trouxemos trouxeram trazido
        |dar dou dá damos dão dei deu demos deram dado|pôr ponho põe pomos põem pus pôs pusemos puseram posto
        |saber sei sabe sabemos sabem soube souberam sabido|querer quero quer queremos querem quis quiseram
        |poder posso pode podemos podem pude pôde puderam
        """.split("|")),
    note_openers=frozenset("""nota notas atualização fyi hoje ontem agora depois antes desde mudou mudei também
        só novo nova ouvi parabéns reunião usuário utilizador""".split()),
    number_words=frozenset("""um uma dois duas três quatro cinco seis sete oito nove dez onze doze vinte trinta
        quarenta cinquenta cem cento mil meio metade dobro primeiro primeira segundo terceiro terceira quarto
        quinto último última próximo próxima""".split()),
    determiners=("o", "a", "os", "as", "um", "uma", "este", "esta", "esse", "essa"),
    verb_endings=("ou", "ava", "ando", "endo", "indo", "ado", "ido"),
    prompt_stop_words=frozenset("""acerca agora ainda antes apenas aquela aquele aquilo assim através cada coisa
        coisas como contra depois desde deve devia essa esse esta está estão este estou favor fazer isso isto
        mais mesmo muito muita muitos nada nesta neste onde outra outro para pela pelo pode podes pois porque
        pouco preciso qual quais quando quanto quero sabe sabes sobre também tenho toda todo todos tudo vamos
        você vocês obrigado obrigada""".split()),
)

LEXICON = PORTUGUESE
